// kafkajs with compression codecs, for the codec interop tests
// (cases/81_test_codecs_interop.py):
//   node codecs_kafkajs.mjs OP BOOTSTRAP 'JSON args' < JSON input
// prints one JSON line {ok: true, ...} or {ok: false, error, skip?}.
//
// Ops:
//   produce  {topic, partition, codec}   stdin: records; one batch,
//            compressed by kafkajs with codec none|gzip|snappy|lz4|zstd
//   fetch    {topic, partition, offset, count}  kafkajs's own Broker.fetch
//            and batch decoder (its consumer API needs a group), which
//            decompresses with the same codecs
//
// Codecs: gzip is built into kafkajs; snappy is kafkajs-snappy, lz4 is
// kafkajs-lz4, zstd is zstd-napi behind kafkajs's codec interface
// (@kafkajs/zstd needs cppzst, which no longer builds on Node 20).
// A codec whose package is missing answers {ok: false, skip}.
import { createRequire } from 'node:module'
import { b64, unb64, bound, kafkajs, readStdinJson, kafkajsClient, jsonReplacer } from './lib.mjs'

const require = createRequire(import.meta.url)
const [op, bootstrap, argsJson] = process.argv.slice(2)
const args = argsJson ? JSON.parse(argsJson) : {}
const { CompressionTypes, CompressionCodecs } = kafkajs

function out (obj) {
  process.stdout.write(JSON.stringify(obj, jsonReplacer) + '\n')
}

const missing = {}
function tryCodec (type, name, make) {
  try {
    CompressionCodecs[type] = make()
  } catch (e) {
    missing[name] = e.message
  }
}
tryCodec(CompressionTypes.Snappy, 'snappy', () => require('kafkajs-snappy'))
tryCodec(CompressionTypes.LZ4, 'lz4', () => { const LZ4 = require('kafkajs-lz4'); return new LZ4().codec })
tryCodec(CompressionTypes.ZSTD, 'zstd', () => {
  const zstd = require('zstd-napi')
  return () => ({
    async compress (encoder) { return zstd.compress(encoder.buffer) },
    async decompress (buffer) { return zstd.decompress(buffer) }
  })
})

const types = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD }

async function produce () {
  const records = await readStdinJson()
  if (missing[args.codec]) return out({ ok: false, skip: true, error: `kafkajs codec ${args.codec}: ${missing[args.codec]}` })
  const kafka = kafkajsClient(bootstrap)
  const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: false, retry: { retries: 1 } })
  await producer.connect()
  try {
    const messages = records.map(r => {
      const headers = {}
      for (const [k, v] of r.headers || []) headers[k] = unb64(v)
      const m = { partition: args.partition ?? 0, key: unb64(r.key), value: unb64(r.value), headers }
      if (r.timestamp != null) m.timestamp = String(r.timestamp)
      return m
    })
    const md = await producer.send({ topic: args.topic, acks: -1, timeout: bound(10000), compression: types[args.codec], messages })
    out({ ok: true, baseOffset: Number(md[0].baseOffset), errorCode: md[0].errorCode })
  } finally {
    await producer.disconnect()
  }
}

function cluster (kafka) {
  const sym = Object.getOwnPropertySymbols(kafka).find(s => String(s).includes('createCluster'))
  return kafka[sym]({ metadataMaxAge: 300000, allowAutoTopicCreation: false })
}

async function fetch () {
  const kafka = kafkajsClient(bootstrap)
  const c = cluster(kafka)
  await c.connect()
  try {
    await c.addTargetTopic(args.topic)
    await c.refreshMetadata()
    const leaders = c.findLeaderForPartitions(args.topic, [args.partition])
    const broker = await c.findBroker({ nodeId: Number(Object.keys(leaders)[0]) })
    const recs = []
    let offset = BigInt(args.offset)
    const deadline = Date.now() + bound(20000)
    while (recs.length < args.count) {
      if (Date.now() > deadline) throw new Error(`kafkajs fetch: ${recs.length} of ${args.count} records before the deadline`)
      const resp = await broker.fetch({
        replicaId: -1,
        isolationLevel: 0,
        maxWaitTime: 100,
        minBytes: 1,
        maxBytes: 10485760,
        topics: [{ topic: args.topic, partitions: [{ partition: args.partition, fetchOffset: offset.toString(), maxBytes: 4194304 }] }]
      })
      const p = resp.responses[0].partitions[0]
      if (p.errorCode !== 0) throw new Error(`kafkajs fetch: partition error code ${p.errorCode}`)
      for (const m of p.messages) {
        if (BigInt(m.offset) < offset || recs.length >= args.count) continue
        const headers = []
        for (const [k, v] of Object.entries(m.headers || {})) {
          if (Array.isArray(v)) v.forEach(x => headers.push([k, b64(x)]))
          else headers.push([k, b64(v)])
        }
        recs.push({ partition: args.partition, offset: Number(m.offset), key: b64(m.key), value: b64(m.value), headers, timestamp: Number(m.timestamp) })
        offset = BigInt(m.offset) + 1n
      }
    }
    out({ ok: true, records: recs })
  } finally {
    await c.disconnect()
  }
}

const ops = { produce, fetch }
try {
  if (!ops[op]) throw new Error(`unknown op ${op}`)
  await ops[op]()
  setTimeout(() => process.exit(0), 50).unref()
} catch (e) {
  out({ ok: false, error: String(e && e.stack ? e.stack : e), missing })
  setTimeout(() => process.exit(1), 50).unref()
}
