// Client quotas with @platformatic/kafka: its Admin's alterClientQuotas
// and describeClientQuotas, and the raw AlterClientQuotas /
// DescribeClientQuotas APIs for answers with errors (the Admin throws
// those away). For 99_test_quotas.py, several calls per run (node
// starts slowly):
//   node quotas_platformatic.mjs BOOTSTRAP JSON
// JSON: a list of [OP, ARG], in order:
//   ["alter", {entries, validateOnly}]   ["describe", {components, strict}]
//   ["raw-alter", {entries, validateOnly}] ["raw-describe", {components, strict}]
//   ["raw-create-topics", {clientId, topics: [[name, partitions]...]}]
//     (CreateTopics v7 on a connection with that client id)
// Prints one JSON line: {ok: true, results: [...]} or {ok: false, error}.
import { loadPlatformatic, platformaticOptions, describeError, done } from './lib.mjs'

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
    } else if (op === 'raw-create-topics') {
      const c2 = new P.Connection(arg.clientId)
      await c2.connect(host, port)
      try {
        const topics = arg.topics.map(([name, n]) => ({ name, numPartitions: n, replicationFactor: 1, assignments: [], configs: [] }))
        results.push(await raw(c2, c => P.createTopicsV7.api.async(c, topics, 15000, false)))
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
console.log(JSON.stringify(out))
done(out.ok ? 0 : 1)
