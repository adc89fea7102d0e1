// DeleteRecords and offsets through the Node clients, for
// cases/80_test_storage.py: one operation per run, one JSON line out.
//   node test_storage_admin.mjs BOOTSTRAP OP '{"topic":...,"partition":...,"offset":...}'
// OP: kafkajs_delete      admin.deleteTopicRecords, then fetchTopicOffsets
//     platformatic_delete admin.deleteRecords (lowWatermark of the answer)
// Prints {"ok":true,...} or {"ok":false,"error":"<Kafka error name>"}.
import { loadPlatformatic, platformaticOptions, kafkajsClient, errorTypes, withTimeout, bound, done } from './lib.mjs'

const [bootstrap, op, argsJson] = process.argv.slice(2)
const args = JSON.parse(argsJson || '{}')

function out (v) {
  process.stdout.write(JSON.stringify(v) + '\n')
}

async function kafkajsDelete () {
  const admin = kafkajsClient(bootstrap).admin()
  await admin.connect()
  try {
    // deleteTopicRecords needs the topic's metadata in kafkajs's cache
    await admin.fetchTopicMetadata({ topics: [args.topic] })
    try {
      await withTimeout(admin.deleteTopicRecords({
        topic: args.topic,
        partitions: [{ partition: args.partition, offset: String(args.offset) }]
      }), bound(20000), 'deleteTopicRecords')
    } catch (e) {
      return { ok: false, error: [...errorTypes(e)].join(',') || String(e.message) }
    }
    const offs = await admin.fetchTopicOffsets(args.topic)
    const p = offs.find(o => o.partition === args.partition)
    return { ok: true, low: Number(p.low), high: Number(p.high) }
  } finally {
    await admin.disconnect()
  }
}

async function platformaticDelete () {
  const { Admin } = await loadPlatformatic()
  const admin = new Admin(platformaticOptions(bootstrap))
  try {
    const res = await withTimeout(admin.deleteRecords({
      topics: [{ name: args.topic, partitions: [{ partition: args.partition, offset: BigInt(args.offset) }] }]
    }), bound(20000), 'deleteRecords')
    const p = res[0].partitions.find(x => x.partition === args.partition)
    return { ok: true, low: Number(p.lowWatermark) }
  } catch (e) {
    return { ok: false, error: [...errorTypes(e)].join(',') || String(e.message) }
  } finally {
    await admin.close()
  }
}

try {
  const ops = { kafkajs_delete: kafkajsDelete, platformatic_delete: platformaticDelete }
  if (!ops[op]) throw new Error(`unknown op ${op}`)
  out(await ops[op]())
  done(0)
} catch (e) {
  out({ ok: false, error: String(e && e.stack ? e.stack : e) })
  done(1)
}
