// server.tls on the gRPC listener (grpc::SslServerCredentials), driven with @grpc/grpc-js's TLS
// credentials: a client certificate of the configured client CA is served; no certificate, a
// self-signed one and a plaintext client are refused. Certificates are made here with `openssl`.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import grpc from '@grpc/grpc-js';
import { startServer, tempDir, removeDir, unique, RlsClient } from './harness.mjs';

const run = promisify(execFile);

const RULES = {
  'tls.yaml': `
domain: tls
descriptors:
  - key: k
    rate_limit: {unit: hour, requests_per_unit: 5}
`,
};

// CA, a server certificate for 127.0.0.1, a client certificate of the CA, a self-signed client.
async function makeCertificates(dir) {
  const openssl = (...args) => run('openssl', args, { cwd: dir });
  const key = (name) => openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`);
  await key('ca');
  await openssl('req', '-new', '-x509', '-key', 'ca.key', '-subj', '/CN=tls test CA', '-days', '30', '-out', 'ca.crt');
  fs.writeFileSync(path.join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  fs.writeFileSync(path.join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const [name, cn] of [['server', 'localhost'], ['client', 'tls test client']]) {
    await key(name);
    await openssl('req', '-new', '-key', `${name}.key`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`);
    await openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial',
      '-days', '30', '-extfile', `${name}.ext`, '-out', `${name}.crt`);
  }
  await key('rogue');
  await openssl('req', '-new', '-x509', '-key', 'rogue.key', '-subj', '/CN=rogue client', '-days', '30', '-out', 'rogue.crt');
  const read = (name) => fs.readFileSync(path.join(dir, name));
  return { read, file: (name) => path.join(dir, name) };
}

let certDir;
let certs;
let server;
before(async () => {
  certDir = await tempDir('spillway-grpc-tls-');
  certs = await makeCertificates(certDir);
  server = await startServer({
    rules: RULES,
    config: {
      server: {
        tls: {
          cert_file: certs.file('server.crt'),
          key_file: certs.file('server.key'),
          client_ca_file: certs.file('ca.crt'),
        },
      },
    },
  });
});
after(async () => {
  if (server) await server.stop();
  if (certDir) await removeDir(certDir);
});

function clientWith(credentials) {
  return new RlsClient(`127.0.0.1:${server.grpcPort}`, credentials);
}

describe('gRPC over TLS', () => {
  it('serves a client certificate of the client CA', async () => {
    const client = clientWith(grpc.credentials.createSsl(certs.read('ca.crt'), certs.read('client.key'), certs.read('client.crt')));
    try {
      const reply = await client.check('tls', [['k', unique()]]);
      assert.equal(reply.overall_code, 'OK');
      assert.equal(reply.statuses[0].limit_remaining, 4);
    } finally {
      client.close();
    }
  });

  for (const [what, credentials] of [
    ['no client certificate', () => grpc.credentials.createSsl(certs.read('ca.crt'))],
    ['a self-signed client certificate', () => grpc.credentials.createSsl(certs.read('ca.crt'), certs.read('rogue.key'), certs.read('rogue.crt'))],
    ['a plaintext client', () => grpc.credentials.createInsecure()],
  ]) {
    it(`refuses ${what}`, async () => {
      const client = clientWith(credentials());
      try {
        await assert.rejects(client.check('tls', [['k', unique()]], { deadlineMs: 10000 }), (err) => {
          assert.ok(err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.DEADLINE_EXCEEDED, `code ${err.code}: ${err.details}`);
          return true;
        });
      } finally {
        client.close();
      }
    });
  }
});
