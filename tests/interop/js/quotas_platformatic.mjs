// Client quotas with @platformatic/kafka: its Admin's alterClientQuotas
// and describeClientQuotas, and the raw AlterClientQuotas /
// DescribeClientQuotas APIs for answers with errors (the Admin throws
// those away). For 99_test_quotas.py, several calls per run (node
// starts slowly; 44_offset_for_leader_epoch.py uses its raw-as):
//   node quotas_platformatic.mjs BOOTSTRAP JSON
// JSON: a list of [OP, ARG], in order:
//   ["alter", {entries, validateOnly}]   ["describe", {components, strict}]
//   ["raw-alter", {entries, validateOnly}] ["raw-describe", {components, strict}]
//   ["raw-as", {clientId, api, args}]: one raw API of the client
//     (createTopicsV7, createPartitionsV3, deleteTopicsV6, ...) with
//     these arguments, on a connection with that client id
// Prints one JSON line: {ok: true, results: [...]} or {ok: false, error}.
import { loadPlatformatic, platformaticOptions, describeError, done, jsonReplacer } from './lib.mjs'

const P = await loadPlatformatic()
const [bootstrap, json] = process.argv.slice(2)
const calls = JSON.parse(json || '[]')
const [host, port] = [bootstrap.split(':')[0], Number(bootstrap.split(':')[1])]

async function raw (conn, fn) {
  try {
    return await fn(conn)
  } catch (e) {
    if (e && e.response) return e.response // an answer with error codes
    throw e
  }
}

let out
const admin = new P.Admin(platformaticOptions(bootstrap))
const conn = new P.Connection('samsa-interop-quotas')
try {
  await conn.connect(host, port)
  const results = []
  for (const [op, arg] of calls) {
    if (op === 'alter') {
      results.push(await admin.alterClientQuotas({ entries: arg.entries, validateOnly: !!arg.validateOnly }))
    } else if (op === 'describe') {
      results.push(await admin.describeClientQuotas({ components: arg.components, strict: !!arg.strict }))
    } else if (op === 'raw-alter') {
      results.push(await raw(conn, c => P.alterClientQuotasV1.api.async(c, arg.entries, !!arg.validateOnly)))
    } else if (op === 'raw-as') {
      const c2 = new P.Connection(arg.clientId)
      await c2.connect(host, port)
      try {
        results.push(await raw(c2, c => P[arg.api].api.async(c, ...arg.args)))
      } finally {
        await c2.close()
      }
    } else if (op === 'raw-describe') {
      results.push(await raw(conn, c => P.describeClientQuotasV0.api.async(c, arg.components, !!arg.strict)))
    } else {
      throw new Error(`unknown op ${op}`)
    }
  }
  out = { ok: true, results }
} catch (e) {
  out = { ok: false, error: describeError(e) }
} finally {
  await conn.close()
  await admin.close()
}
console.log(JSON.stringify(out, jsonReplacer))
done(out.ok ? 0 : 1)
