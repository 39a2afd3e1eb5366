// Writes deploy/kubernetes/'s ConfigMap and Deployment as one file for `podman kube play` on a
// test machine (tests/container/container_test.sh), changing only what a shared machine needs:
//   - the image: the one the test built (IMAGE);
//   - one replica, on the host's network (hostNetwork: the tests reach loopback only), with the
//     config's listen addresses on 127.0.0.1 and free ports (HTTP_PORT, GRPC_PORT) instead of
//     0.0.0.0:8080 and :8081; the probes' named port replaced by that number and the
//     container's port list dropped (podman publishes no port on the host's network);
//   - the Deployment's name: NAME (its pod is NAME-pod-0), and the ConfigMap's: NAME-config
//     (podman makes it a named volume of that name). Two tests that play the Deployment at once
//     must share neither: `podman kube play --replace` would end the other's pod, and a second
//     play of a ConfigMap rewrites the first one's volume. The caller removes the volume after
//     `--down` (which leaves it).
// Everything else (probes, security context, resources, the config volume, args) is the
// manifests' own. Prints, as JSON, what the test checks: the Deployment's name, the container's
// name, and each probe's path and port number (a named port resolved against the container's).
// Usage: node play_manifest.mjs IMAGE HTTP_PORT GRPC_PORT OUT_FILE NAME
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';

const [image, httpPort, grpcPort, outFile, name] = process.argv.slice(2);
if (!name) {
  console.error('usage: node play_manifest.mjs IMAGE HTTP_PORT GRPC_PORT OUT_FILE NAME');
  process.exit(2);
}
const deployDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)),
  '../../deploy/kubernetes');
const read = (file) => parse(readFileSync(path.join(deployDir, file), 'utf8'));
const configMap = read('configmap.yaml');
const deployment = read('deployment.yaml');

const newPorts = { http: Number(httpPort), grpc: Number(grpcPort) };
const config = parse(configMap.data['spillway.yaml']);
const container = deployment.spec.template.spec.containers[0];
const oldPorts = Object.fromEntries(container.ports.map((p) => [p.name, p.containerPort]));
const replaceListen = (value, name) => {
  if (value !== `0.0.0.0:${oldPorts[name]}`) {
    throw new Error(`the config's ${name} listen address ${value} is not 0.0.0.0:${oldPorts[name]}`);
  }
  return `127.0.0.1:${newPorts[name]}`;
};
config.server.listen = replaceListen(config.server.listen, 'http');
config.server.grpc_listen = replaceListen(config.server.grpc_listen, 'grpc');
configMap.data['spillway.yaml'] = stringify(config);

deployment.metadata.name = name;
const configVolume = deployment.spec.template.spec.volumes.find(
  (v) => v.configMap?.name === configMap.metadata.name);
if (!configVolume) throw new Error(`no volume of the Deployment mounts ${configMap.metadata.name}`);
configMap.metadata.name = `${name}-config`;
configVolume.configMap.name = configMap.metadata.name;
deployment.spec.replicas = 1;
deployment.spec.template.spec.hostNetwork = true;
container.image = image;
for (const port of container.ports) port.containerPort = newPorts[port.name];

const probe = (p) => {
  const port = typeof p.httpGet.port === 'number' ? p.httpGet.port
    : container.ports.find((c) => c.name === p.httpGet.port)?.containerPort;
  if (!port) throw new Error(`a probe names port ${p.httpGet.port}, which the container lacks`);
  return { path: p.httpGet.path, port };
};
const readiness = probe(container.readinessProbe);
const liveness = probe(container.livenessProbe);
// On the host's network podman publishes no ports (it refuses containerPort mappings there): the
// container's ports go, and the probes name the port numbers they resolved to.
delete container.ports;
container.readinessProbe.httpGet.port = readiness.port;
container.livenessProbe.httpGet.port = liveness.port;
writeFileSync(outFile, `${stringify(configMap)}---\n${stringify(deployment)}`);
console.log(JSON.stringify({
  deployment: deployment.metadata.name,
  container: container.name,
  readiness,
  liveness,
}));
