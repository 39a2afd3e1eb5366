// deploy/kubernetes/ validated offline (ctest container.manifests): every object of every
// manifest against the Kubernetes API schemas (npm kubernetes-models, version pinned in
// package-lock.json, installed by scripts/setup.sh), then what the manifests promise each other
// and docs/deploy.md: the probes, the security context, the named ports, the config's listen
// addresses matching the container's ports, selectors matching the pods, kustomization.yaml
// listing files that exist, Envoy's config pointing at spillway's gRPC port.
// Run: node --test tests/kubernetes/manifests.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, parse } from 'yaml';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';

const deployDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)),
  '../../deploy/kubernetes');
const models = {
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};

// Every object of FILE (a multi-document YAML), parsed strictly (a duplicate key, a tab: error).
function objectsOf(file) {
  const text = readFileSync(path.join(deployDir, file), 'utf8');
  return parseAllDocuments(text, { uniqueKeys: true }).map((doc, i) => {
    assert.deepEqual(doc.errors, [], `${file}, document ${i + 1}: YAML errors`);
    return doc.toJS();
  });
}
const manifestFiles = readdirSync(deployDir)
  .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
const all = manifestFiles.flatMap((file) => objectsOf(file).map((object) => ({ file, object })));
const find = (file, kind) => {
  const found = all.filter((o) => o.file === file && o.object.kind === kind);
  assert.equal(found.length, 1, `${file} holds ${found.length} ${kind}(s), not 1`);
  return found[0].object;
};

test('every object validates against the Kubernetes API schema of its kind', () => {
  assert.ok(manifestFiles.length >= 5, `only ${manifestFiles.join(', ')} in ${deployDir}`);
  for (const { file, object } of all) {
    const Model = models[`${object.apiVersion}/${object.kind}`];
    assert.ok(Model, `${file}: ${object.apiVersion} ${object.kind} has no schema here`);
    assert.doesNotThrow(() => new Model(object).validate(),
      `${file}: ${object.kind} ${object.metadata?.name}`);
  }
});

test('the validator rejects a manifest that breaks the schema', () => {
  const deployment = structuredClone(find('deployment.yaml', 'Deployment'));
  deployment.spec.replicas = 'two';
  assert.throws(() => new Deployment(deployment).validate());
  const service = structuredClone(find('service.yaml', 'Service'));
  service.spec.ports[0].port = 'http';
  assert.throws(() => new Service(service).validate());
});

test('the Deployment: probes, restricted security context, resources, config volume', () => {
  const deployment = find('deployment.yaml', 'Deployment');
  const pod = deployment.spec.template.spec;
  assert.deepEqual(deployment.spec.selector.matchLabels, deployment.spec.template.metadata.labels);
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.ok(pod.securityContext.runAsUser > 0, 'runAsUser is root');
  assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
  assert.equal(pod.containers.length, 1);
  const [c] = pod.containers;
  assert.equal(c.readinessProbe.httpGet.path, '/readyz');
  assert.equal(c.livenessProbe.httpGet.path, '/healthz');
  const portNames = c.ports.map((p) => p.name);
  assert.deepEqual(portNames, ['http', 'grpc']);
  assert.equal(c.readinessProbe.httpGet.port, 'http');
  assert.equal(c.livenessProbe.httpGet.port, 'http');
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
  assert.ok(c.resources.requests.cpu && c.resources.requests.memory, 'no resource requests');
  assert.ok(c.resources.limits.memory, 'no memory limit');
  const mount = c.volumeMounts.find((m) => m.mountPath === '/etc/spillway');
  assert.ok(mount?.readOnly, 'no read-only mount at /etc/spillway');
  const volume = pod.volumes.find((v) => v.name === mount.name);
  assert.equal(volume.configMap.name, find('configmap.yaml', 'ConfigMap').metadata.name);
  assert.deepEqual(c.args, ['serve', '--config', '/etc/spillway/spillway.yaml']);
});

test('the config listens on the container ports; its rules file is in the ConfigMap', () => {
  const data = find('configmap.yaml', 'ConfigMap').data;
  const config = parse(data['spillway.yaml'], { uniqueKeys: true });
  const ports = Object.fromEntries(find('deployment.yaml', 'Deployment')
    .spec.template.spec.containers[0].ports.map((p) => [p.name, p.containerPort]));
  assert.equal(config.server.listen, `0.0.0.0:${ports.http}`);
  assert.equal(config.server.grpc_listen, `0.0.0.0:${ports.grpc}`);
  assert.equal(path.dirname(config.rls.config), '/etc/spillway');
  const rules = parse(data[path.basename(config.rls.config)], { uniqueKeys: true });
  assert.equal(rules.domain, 'edge');
});

test('the Service names http, grpc and metrics; it and the PDB select the pods', () => {
  const labels = find('deployment.yaml', 'Deployment').spec.template.metadata.labels;
  const service = find('service.yaml', 'Service');
  assert.deepEqual(service.spec.ports.map((p) => p.name), ['http', 'grpc', 'metrics']);
  assert.deepEqual(service.spec.ports.map((p) => p.targetPort), ['http', 'grpc', 'http']);
  assert.equal(service.spec.type, 'ClusterIP');
  for (const [key, value] of Object.entries(service.spec.selector)) {
    assert.equal(labels[key], value, `the Service selects ${key}=${value}`);
  }
  const pdb = find('poddisruptionbudget.yaml', 'PodDisruptionBudget');
  assert.deepEqual(pdb.spec.selector.matchLabels, service.spec.selector);
});

test('kustomization.yaml lists every spillway manifest, each existing', () => {
  const kustomization = parse(readFileSync(path.join(deployDir, 'kustomization.yaml'), 'utf8'));
  assert.equal(kustomization.kind, 'Kustomization');
  for (const file of kustomization.resources) {
    assert.ok(existsSync(path.join(deployDir, file)), `${file} is listed but missing`);
  }
  assert.deepEqual([...kustomization.resources].sort(),
    manifestFiles.filter((f) => f !== 'envoy-example.yaml').sort());
});

test("the Envoy example asks spillway's gRPC port about the rules' domain", () => {
  const envoyConfig = all.find((o) => o.file === 'envoy-example.yaml' &&
    o.object.kind === 'ConfigMap').object.data['envoy.yaml'];
  const envoy = parse(envoyConfig, { uniqueKeys: true });
  const rls = envoy.static_resources.clusters.find((c) => c.name === 'spillway_rls');
  const address = rls.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;
  const service = find('service.yaml', 'Service');
  assert.equal(address.address, service.metadata.name);
  assert.equal(address.port_value, service.spec.ports.find((p) => p.name === 'grpc').port);
  const filter = envoy.static_resources.listeners[0].filter_chains[0].filters[0].typed_config
    .http_filters.find((f) => f.name === 'envoy.filters.http.ratelimit').typed_config;
  assert.equal(filter.domain, 'edge');
  assert.equal(filter.rate_limit_service.transport_api_version, 'V3');
});
