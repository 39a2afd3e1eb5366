// gRPC server reflection (grpc.reflection.v1alpha) on spillway serve's gRPC listener:
// list_services, file_containing_symbol and an unknown symbol, each over the bidi stream.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protoLoader from '@grpc/proto-loader';
import { startServer, grpc } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

const RULES = {
  'reflection.yaml': `
domain: reflection
descriptors:
  - key: k
    rate_limit: {unit: hour, requests_per_unit: 1}
`,
};

const definition = protoLoader.loadSync(path.join(here, 'reflection.proto'), {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
const ServerReflection = grpc.loadPackageDefinition(definition).grpc.reflection.v1alpha.ServerReflection;

// Opens one ServerReflectionInfo stream, writes every request, half-closes, and resolves
// with all responses once the server ends the stream with OK. A deadline makes a hang fail.
function reflect(client, requests, { deadlineMs = 5000 } = {}) {
  return new Promise((resolve, reject) => {
    const call = client.ServerReflectionInfo({ deadline: new Date(Date.now() + deadlineMs) });
    const responses = [];
    call.on('data', (response) => responses.push(response));
    call.on('error', reject);
    call.on('status', (status) => {
      if (status.code === grpc.status.OK) resolve(responses);
      // A non-OK status is reported through 'error' as well.
    });
    for (const request of requests) call.write(request);
    call.end();
  });
}

let server;
let client;
before(async () => {
  server = await startServer({ rules: RULES });
  client = new ServerReflection(`127.0.0.1:${server.grpcPort}`, grpc.credentials.createInsecure());
});
after(async () => {
  if (client) client.close();
  if (server) await server.stop();
});

describe('server reflection (v1alpha)', () => {
  it('list_services names the rate limit and health services', async () => {
    const responses = await reflect(client, [{ host: '', list_services: '*' }]);
    assert.equal(responses.length, 1);
    const [response] = responses;
    assert.equal(response.message_response, 'list_services_response', JSON.stringify(response));
    const names = response.list_services_response.service.map((s) => s.name);
    assert.ok(names.includes('envoy.service.ratelimit.v3.RateLimitService'), `services: ${names}`);
    assert.ok(names.includes('grpc.health.v1.Health'), `services: ${names}`);
    assert.equal(response.original_request?.list_services, '*');
  });

  it('file_containing_symbol RateLimitService returns rls.proto\'s descriptor', async () => {
    const responses = await reflect(client, [
      { file_containing_symbol: 'envoy.service.ratelimit.v3.RateLimitService' },
    ]);
    assert.equal(responses.length, 1);
    const [response] = responses;
    assert.equal(response.message_response, 'file_descriptor_response', JSON.stringify(response.error_response));
    const files = response.file_descriptor_response.file_descriptor_proto;
    assert.ok(files.length >= 1, 'at least one FileDescriptorProto');
    for (const bytes of files) assert.ok(Buffer.isBuffer(bytes));
    assert.ok(
      files.some((bytes) => bytes.includes('envoy/service/ratelimit/v3/rls.proto')),
      'a descriptor names envoy/service/ratelimit/v3/rls.proto',
    );
  });

  it('an unknown symbol gives error_response with a non-zero error_code', async () => {
    const symbol = 'no.such.pkg.NoSuchService';
    const responses = await reflect(client, [{ file_containing_symbol: symbol }]);
    assert.equal(responses.length, 1);
    const [response] = responses;
    assert.equal(response.message_response, 'error_response', JSON.stringify(response));
    assert.notEqual(response.error_response.error_code, 0);
    assert.equal(response.original_request?.file_containing_symbol, symbol);
  });

  // (grpc.health.v1.Health is listed but has no descriptor: grpc++'s built-in health
  // service is not in the generated pool, so it is not looked up here.)
  it('several requests on one stream are answered in order', async () => {
    const responses = await reflect(client, [
      { list_services: '' },
      { file_containing_symbol: 'no.such.Symbol' },
      { file_containing_symbol: 'envoy.service.ratelimit.v3.RateLimitRequest' },
    ]);
    assert.deepEqual(
      responses.map((r) => r.message_response),
      ['list_services_response', 'error_response', 'file_descriptor_response'],
    );
  });
});
