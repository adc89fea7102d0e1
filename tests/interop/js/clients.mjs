// Node clients as commands for the Python tests:
//   node clients.mjs OP BOOTSTRAP 'JSON args' < JSON input
// prints one JSON line {ok: true, ...} or {ok: false, error, types}.
// Records are {key, value (base64|null), headers [[name, base64|null]],
// partition, timestamp (ms|null), offset}.
//
// Ops:
//   kafkajs-produce     {topic, acks, kafkajs, producer}   stdin: records (kafkajs: extra client options,
//                        e.g. sasl; producer: extra producer options, e.g. idempotent)
//   kafkajs-fetch       {topic, partition, offset, count, maxBytes, kafkajs}
//                        kafkajs's consumer API needs a consumer group, so
//                        this drives kafkajs's own Broker.fetch and record
//                        batch decoder directly (no group).
//   kafkajs-offsets     {topic, timestamp?}       fetchTopicOffsets / ...ByTimestamp
//   kafkajs-txn-offsets {transactionalId, topic, value, group, offsets: [{topic, partition, offset}], commit}
//                        one transaction: a record to topic, sendOffsets for
//                        group, then commit (or abort when commit is false)
//   plat-produce        {topic, acks, platformatic}  stdin: records (platformatic: extra options, e.g. sasl)
//   plat-fetch          {topic, partition, offset, count, maxBytes, platformatic}
//                        Consumer.fetch: a plain Fetch, no group.
//   plat-offsets        {topic, timestamp?}
//   plat-incremental-alter-configs {resources: [{type: 'BROKER'|'TOPIC', name, configs: [{name, op: 'SET'|'DELETE'|
//                        'APPEND'|'SUBTRACT', value}]}], validateOnly, platformatic}
//                        Admin.incrementalAlterConfigs; a refusal prints its
//                        error types, the broker's error messages and the
//                        nested errors (causes).
import { b64, unb64, bound, kafkajs, loadPlatformatic, readStdinJson, withTimeout, errorTypes, describeError, kafkajsClient, platformaticOptions, jsonReplacer } from './lib.mjs'

const [op, bootstrap, argsJson] = process.argv.slice(2)
const args = argsJson ? JSON.parse(argsJson) : {}
const platformatic = op.startsWith('plat-') ? await loadPlatformatic() : null

function out (obj) {
  process.stdout.write(JSON.stringify(obj, jsonReplacer) + '\n')
}

// ---------------------------------------------------------------- kafkajs

async function kafkajsProduce () {
  const records = await readStdinJson()
  const kafka = kafkajsClient(bootstrap, args.kafkajs || {})
  const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: false, retry: { retries: 1 }, ...(args.producer || {}) })
  await producer.connect()
  try {
    // One send per partition keeps one batch per partition, so offsets are
    // base offset + position.
    const byPartition = new Map()
    records.forEach((r, i) => {
      if (!byPartition.has(r.partition)) byPartition.set(r.partition, [])
      byPartition.get(r.partition).push(i)
    })
    const results = new Array(records.length)
    for (const [partition, idxs] of byPartition) {
      const messages = idxs.map(i => {
        const r = records[i]
        const headers = {}
        for (const [k, v] of r.headers || []) {
          if (k in headers) headers[k] = [].concat(headers[k], unb64(v))
          else headers[k] = unb64(v)
        }
        const m = { partition, key: unb64(r.key), value: unb64(r.value), headers }
        if (r.timestamp != null) m.timestamp = String(r.timestamp)
        return m
      })
      const md = await producer.send({ topic: args.topic, acks: args.acks ?? -1, timeout: bound(10000), messages })
      const base = Number(md[0].baseOffset)
      idxs.forEach((i, pos) => { results[i] = { partition: md[0].partition, offset: base + pos, errorCode: md[0].errorCode } })
    }
    out({ ok: true, results })
  } finally {
    await producer.disconnect()
  }
}

async function kafkajsTxnOffsets () {
  const kafka = kafkajsClient(bootstrap, args.kafkajs || {})
  const producer = kafka.producer({
    allowAutoTopicCreation: false, idempotent: true, maxInFlightRequests: 1, transactionalId: args.transactionalId
  })
  await producer.connect()
  try {
    const txn = await producer.transaction()
    await txn.send({ topic: args.topic, messages: [{ value: args.value }] })
    const byTopic = new Map()
    for (const o of args.offsets) {
      if (!byTopic.has(o.topic)) byTopic.set(o.topic, [])
      byTopic.get(o.topic).push({ partition: o.partition, offset: String(o.offset) })
    }
    await txn.sendOffsets({
      consumerGroupId: args.group,
      topics: [...byTopic].map(([topic, partitions]) => ({ topic, partitions }))
    })
    if (args.commit) await txn.commit()
    else await txn.abort()
    out({ ok: true })
  } finally {
    await producer.disconnect()
  }
}

function kafkajsCluster (kafka) {
  const sym = Object.getOwnPropertySymbols(kafka).find(s => String(s).includes('createCluster'))
  return kafka[sym]({ metadataMaxAge: 300000, allowAutoTopicCreation: false })
}

async function kafkajsFetch () {
  const kafka = kafkajsClient(bootstrap, args.kafkajs || {})
  const cluster = kafkajsCluster(kafka)
  await cluster.connect()
  try {
    await cluster.addTargetTopic(args.topic)
    await cluster.refreshMetadata()
    const leaders = cluster.findLeaderForPartitions(args.topic, [args.partition])
    const leader = Number(Object.keys(leaders)[0])
    const broker = await cluster.findBroker({ nodeId: leader })
    const want = args.count
    const recs = []
    let offset = BigInt(args.offset)
    let highWatermark = null
    const deadline = Date.now() + bound(args.limitMs || 20000)
    while (recs.length < want) {
      if (Date.now() > deadline) throw new Error(`kafkajs fetch: ${recs.length} of ${want} records before the deadline`)
      const resp = await broker.fetch({
        replicaId: -1,
        isolationLevel: 0,
        maxWaitTime: 100,
        minBytes: 1,
        maxBytes: args.maxBytes || 10485760,
        topics: [{ topic: args.topic, partitions: [{ partition: args.partition, fetchOffset: offset.toString(), maxBytes: args.maxBytes || 1048576 }] }]
      })
      const p = resp.responses[0].partitions[0]
      if (p.errorCode !== 0) throw new Error(`kafkajs fetch: partition error code ${p.errorCode}`)
      highWatermark = p.highWatermark
      for (const m of p.messages) {
        if (BigInt(m.offset) < offset || recs.length >= want) continue
        const headers = []
        for (const [k, v] of Object.entries(m.headers || {})) {
          if (Array.isArray(v)) v.forEach(x => headers.push([k, b64(x)]))
          else headers.push([k, b64(v)])
        }
        recs.push({ partition: args.partition, offset: Number(m.offset), key: b64(m.key), value: b64(m.value), headers, timestamp: Number(m.timestamp) })
        offset = BigInt(m.offset) + 1n
      }
    }
    out({ ok: true, records: recs, highWatermark: Number(highWatermark), fetchVersion: broker.versions ? broker.versions[1] : null })
  } finally {
    await cluster.disconnect()
  }
}

async function kafkajsOffsets () {
  const kafka = kafkajsClient(bootstrap)
  const admin = kafka.admin()
  await admin.connect()
  try {
    if (args.timestamp != null) {
      const res = await admin.fetchTopicOffsetsByTimestamp(args.topic, args.timestamp)
      out({ ok: true, offsets: res.map(p => ({ partition: p.partition, offset: Number(p.offset) })) })
    } else {
      const res = await admin.fetchTopicOffsets(args.topic)
      out({ ok: true, offsets: res.map(p => ({ partition: p.partition, offset: Number(p.offset), high: Number(p.high), low: Number(p.low) })) })
    }
  } finally {
    await admin.disconnect()
  }
}

// ---------------------------------------------------------------- @platformatic/kafka

async function platProduce () {
  const records = await readStdinJson()
  const producer = new platformatic.Producer(platformaticOptions(bootstrap, { idempotent: false, autocreateTopics: false, ...(args.platformatic || {}) }))
  try {
    const byPartition = new Map()
    records.forEach((r, i) => {
      if (!byPartition.has(r.partition)) byPartition.set(r.partition, [])
      byPartition.get(r.partition).push(i)
    })
    const results = new Array(records.length)
    for (const [partition, idxs] of byPartition) {
      const messages = idxs.map(i => {
        const r = records[i]
        const headers = new Map()
        // Distinct Buffer objects as keys: repeated header names stay repeated.
        for (const [k, v] of r.headers || []) headers.set(Buffer.from(k), unb64(v))
        const m = { topic: args.topic, partition, key: unb64(r.key) ?? undefined, value: unb64(r.value) ?? undefined, headers }
        if (r.timestamp != null) m.timestamp = BigInt(r.timestamp)
        return m
      })
      const res = await producer.send({ messages, acks: args.acks ?? -1 })
      const o = (res.offsets || []).find(x => x.topic === args.topic && x.partition === partition)
      if (!o) throw new Error(`platformatic send: no offset for partition ${partition} in ${JSON.stringify(res, jsonReplacer)}`)
      const base = Number(o.offset)
      idxs.forEach((i, pos) => { results[i] = { partition, offset: base + pos } })
    }
    out({ ok: true, results })
  } finally {
    await producer.close()
  }
}

async function platFetch () {
  const consumer = new platformatic.Consumer(platformaticOptions(bootstrap, { groupId: 'samsa-interop-unused', autocreateTopics: false, ...(args.platformatic || {}) }))
  try {
    const md = await consumer.metadata({ topics: [args.topic] })
    const t = md.topics.get(args.topic)
    const leader = t.partitions[args.partition].leader
    const recs = []
    let offset = BigInt(args.offset)
    let highWatermark = null
    const deadline = Date.now() + bound(args.limitMs || 20000)
    while (recs.length < args.count) {
      if (Date.now() > deadline) throw new Error(`platformatic fetch: ${recs.length} of ${args.count} records before the deadline`)
      const resp = await consumer.fetch({
        node: leader,
        topics: [{ topicId: t.id, partitions: [{ partition: args.partition, fetchOffset: offset, partitionMaxBytes: args.maxBytes || 1048576, currentLeaderEpoch: -1, lastFetchedEpoch: -1 }] }]
      })
      const p = resp.responses[0].partitions[0]
      if (p.errorCode !== 0) throw new Error(`platformatic fetch: partition error code ${p.errorCode}`)
      highWatermark = p.highWatermark
      for (const batch of p.records || []) {
        for (const r of batch.records) {
          const off = batch.firstOffset + BigInt(r.offsetDelta)
          if (off < offset || recs.length >= args.count) continue
          recs.push({
            partition: args.partition,
            offset: Number(off),
            key: b64(r.key),
            value: b64(r.value),
            headers: (r.headers || []).map(([k, v]) => [k.toString(), b64(v)]),
            timestamp: Number(batch.firstTimestamp + r.timestampDelta)
          })
          offset = off + 1n
        }
      }
    }
    out({ ok: true, records: recs, highWatermark: Number(highWatermark), topicId: t.id })
  } finally {
    await consumer.close(true)
  }
}

async function platOffsets () {
  const consumer = new platformatic.Consumer(platformaticOptions(bootstrap, { groupId: 'samsa-interop-unused', autocreateTopics: false, ...(args.platformatic || {}) }))
  try {
    const opts = { topics: [args.topic] }
    if (args.timestamp != null) opts.timestamp = BigInt(args.timestamp)
    const res = await consumer.listOffsets(opts)
    out({ ok: true, offsets: (res.get(args.topic) || []).map((o, partition) => ({ partition, offset: Number(o) })) })
  } finally {
    await consumer.close(true)
  }
}

// Every error message of the broker's found in a platformatic error.
function errorMessages (e) {
  const out = []
  const seen = new Set()
  const visit = x => {
    if (!x || typeof x !== 'object' || seen.has(x)) return
    seen.add(x)
    for (const k of ['serverErrorMessage', 'errorMessage']) if (typeof x[k] === 'string') out.push(x[k])
    for (const k of new Set([...Object.keys(x), 'errors', 'cause', 'response'])) visit(x[k])
  }
  visit(e)
  return [...new Set(out)]
}

async function platIncrementalAlterConfigs () {
  const { Admin, ConfigResourceTypes, IncrementalAlterConfigOperationTypes: OP } = platformatic
  const admin = new Admin(platformaticOptions(bootstrap, args.platformatic || {}))
  try {
    await admin.incrementalAlterConfigs({
      validateOnly: !!args.validateOnly,
      resources: args.resources.map(r => ({
        resourceType: ConfigResourceTypes[r.type],
        resourceName: r.name,
        configs: r.configs.map(c => ({ name: c.name, configOperation: OP[c.op], value: c.value }))
      }))
    })
    out({ ok: true })
  } catch (e) {
    out({ ok: false, error: describeError(e), types: errorTypes(e), messages: errorMessages(e), causes: (e.errors || []).map(describeError) })
  } finally {
    await admin.close()
  }
}

const ops = {
  'kafkajs-produce': kafkajsProduce,
  'kafkajs-fetch': kafkajsFetch,
  'kafkajs-offsets': kafkajsOffsets,
  'kafkajs-txn-offsets': kafkajsTxnOffsets,
  'plat-produce': platProduce,
  'plat-fetch': platFetch,
  'plat-offsets': platOffsets,
  'plat-incremental-alter-configs': platIncrementalAlterConfigs
}

const fn = ops[op]
if (!fn) {
  out({ ok: false, error: `unknown op ${op}` })
  process.exit(2)
}
try {
  await withTimeout(fn(), bound(args.limitMs ? args.limitMs + 10000 : 40000), op)
  exitAfterFlush(0)
} catch (e) {
  out({ ok: false, error: describeError(e), types: errorTypes(e) })
  exitAfterFlush(1)
}

// Exit without waiting for client teardown, but only once stdout (a pipe,
// written asynchronously) has taken the whole result.
function exitAfterFlush (code) {
  process.stdout.write('', () => process.exit(code))
}
