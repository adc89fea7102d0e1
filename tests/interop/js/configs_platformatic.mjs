// IncrementalAlterConfigs with @platformatic/kafka's raw API (its answer
// with error codes and messages, which the Admin turns into an
// exception). For 96_test_tls_reload.py:
//   node configs_platformatic.mjs BOOTSTRAP JSON
// JSON: {resources: [{resourceType, resourceName, configs: [{name,
// configOperation, value}]}], validateOnly}
// Prints one JSON line: {ok: true, result: {throttleTimeMs, responses}}
// or {ok: false, error}.
import { loadPlatformatic, describeError, done } from './lib.mjs'

const P = await loadPlatformatic()
const [bootstrap, json] = process.argv.slice(2)
const arg = JSON.parse(json || '{}')
const [host, port] = [bootstrap.split(':')[0], Number(bootstrap.split(':')[1])]

let out
const conn = new P.Connection('samsa-interop-configs')
try {
  await conn.connect(host, port)
  let result
  try {
    result = await P.incrementalAlterConfigsV1.api.async(conn, arg.resources, !!arg.validateOnly)
  } catch (e) {
    if (!e || !e.response) throw e
    result = e.response // an answer with error codes
  }
  out = { ok: true, result }
} catch (e) {
  out = { ok: false, error: describeError(e) }
} finally {
  await conn.close()
}
console.log(JSON.stringify(out))
done(out.ok ? 0 : 1)
