// Transactional producers of the Node clients (kafkajs 2.2.4,
// @platformatic/kafka 1.35.0) and kafkajs's read_committed consumer, as
// commands for cases/39_transactions.py:
//   node txn_js.mjs OP BOOTSTRAP 'JSON args'
// prints one JSON result line last: {ok: true, ...} or {ok: false, error,
// types}. Values are UTF-8 strings.
//
// Ops:
//   kafkajs-txn  {tid, txns: [{topic, messages: [{partition, value}],
//                offsets?: {group, topic, partition, offset}, end}]}
//                producer({transactionalId, idempotent, maxInFlightRequests
//                1}); per element one transaction(): send (one send per
//                partition), sendOffsets when given, then commit() or
//                abort() as `end` says. Answers {results: [[{partition,
//                offset}] per message] per transaction}.
//   kafkajs-read {topic, group, count, readUncommitted=false, quietMs=1500}
//                consumer({groupId, readUncommitted}) from the beginning
//                until `count` records arrived and then quietMs more
//                (nothing else may come): {records: [{partition, offset,
//                value}]} sorted by partition and offset.
//   plat-txn     {tid, txns: as kafkajs-txn, no offsets}
//                Producer({idempotent, transactionalId}).beginTransaction(),
//                send, commit() / abort().
import { bound, loadPlatformatic, withTimeout, errorTypes, describeError, kafkajsClient, platformaticOptions, jsonReplacer } from './lib.mjs'

const [op, bootstrap, argsJson] = process.argv.slice(2)
const args = argsJson ? JSON.parse(argsJson) : {}
const platformatic = op && op.startsWith('plat-') ? await loadPlatformatic() : null
const limitMs = bound(args.limitMs || 40000)

function out (obj) {
  process.stdout.write(JSON.stringify(obj, jsonReplacer) + '\n')
}

function byPartition (messages) {
  const m = new Map()
  messages.forEach((x, i) => {
    if (!m.has(x.partition)) m.set(x.partition, [])
    m.get(x.partition).push(i)
  })
  return m
}

async function kafkajsTxn () {
  const kafka = kafkajsClient(bootstrap, { retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 } })
  const producer = kafka.producer({ transactionalId: args.tid, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false })
  await producer.connect()
  try {
    const results = []
    for (const t of args.txns) {
      const tx = await producer.transaction()
      const res = new Array(t.messages.length)
      for (const [partition, idxs] of byPartition(t.messages)) {
        const md = await tx.send({ topic: t.topic, acks: -1, messages: idxs.map(i => ({ partition, value: t.messages[i].value })) })
        const base = Number(md[0].baseOffset)
        idxs.forEach((i, pos) => { res[i] = { partition, offset: base + pos } })
      }
      if (t.offsets) {
        const o = t.offsets
        await tx.sendOffsets({ consumerGroupId: o.group, topics: [{ topic: o.topic, partitions: [{ partition: o.partition, offset: String(o.offset) }] }] })
      }
      if (t.end === 'commit') await tx.commit()
      else await tx.abort()
      results.push(res)
    }
    out({ ok: true, results })
  } finally {
    await producer.disconnect()
  }
}

async function kafkajsRead () {
  const kafka = kafkajsClient(bootstrap)
  const consumer = kafka.consumer({ groupId: args.group, readUncommitted: !!args.readUncommitted, maxWaitTimeInMs: 100, allowAutoTopicCreation: false })
  await consumer.connect()
  const records = []
  try {
    await consumer.subscribe({ topics: [args.topic], fromBeginning: true })
    let enough
    const reached = new Promise(resolve => { enough = resolve })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        records.push({ partition, offset: Number(message.offset), value: message.value == null ? null : message.value.toString() })
        if (records.length >= args.count) enough()
      }
    })
    if (args.count > 0) await withTimeout(reached, limitMs, `kafkajs read of ${args.count} records (got ${records.length})`)
    await new Promise(resolve => setTimeout(resolve, bound(args.quietMs ?? 1500)))
  } finally {
    await consumer.disconnect()
  }
  records.sort((a, b) => a.partition - b.partition || a.offset - b.offset)
  out({ ok: true, records })
}

async function platTxn () {
  const producer = new platformatic.Producer(platformaticOptions(bootstrap, { idempotent: true, transactionalId: args.tid, autocreateTopics: false, retries: 5, retryDelay: 200 }))
  try {
    const results = []
    for (const t of args.txns) {
      const tx = await producer.beginTransaction()
      const res = new Array(t.messages.length)
      for (const [partition, idxs] of byPartition(t.messages)) {
        const r = await tx.send({ messages: idxs.map(i => ({ topic: t.topic, partition, value: Buffer.from(t.messages[i].value) })), acks: -1 })
        const o = (r.offsets || []).find(x => x.topic === t.topic && x.partition === partition)
        if (!o) throw new Error(`platformatic send: no offset for partition ${partition} in ${JSON.stringify(r, jsonReplacer)}`)
        idxs.forEach((i, pos) => { res[i] = { partition, offset: Number(o.offset) + pos } })
      }
      if (t.end === 'commit') await tx.commit()
      else await tx.abort()
      results.push(res)
    }
    out({ ok: true, results })
  } finally {
    await producer.close()
  }
}

const ops = { 'kafkajs-txn': kafkajsTxn, 'kafkajs-read': kafkajsRead, 'plat-txn': platTxn }

function exitAfterFlush (code) {
  process.stdout.write('', () => process.exit(code))
}

if (!ops[op]) {
  out({ ok: false, error: `unknown op ${op}` })
  exitAfterFlush(2)
} else {
  try {
    await withTimeout(ops[op](), limitMs + bound(10000), op)
    exitAfterFlush(0)
  } catch (e) {
    out({ ok: false, error: describeError(e), types: errorTypes(e) })
    exitAfterFlush(1)
  }
}
