// Consumer groups with the Node clients, as commands for
// cases/93_test_groups_js.py:
//   node groups_js.mjs OP BOOTSTRAP 'JSON args'
// prints one JSON line {ok: true, ...} or {ok: false, error, types}.
//
// Ops:
//   kafkajs-consume   {topic, group, count}  consumer.subscribe/run with
//                     kafkajs's own commits (autoCommit), then disconnect
//                     (commit + LeaveGroup); records and committed offsets
//   kafkajs-admin     {group, topic}          listGroups, describeGroups,
//                     fetchOffsets, resetOffsets, deleteGroups
//   plat-consume      {topic, group, count}  Consumer.consume in
//                     'committed' mode, each message committed, then close
//   plat-admin        {group, topic}          listGroups, describeGroups,
//                     listConsumerGroupOffsets, alterConsumerGroupOffsets,
//                     deleteConsumerGroupOffsets, deleteGroups
import { bound, kafkajs, loadPlatformatic, withTimeout, errorTypes, describeError, kafkajsClient, platformaticOptions, jsonReplacer } from './lib.mjs'

const [op, bootstrap, argsJson] = process.argv.slice(2)
const args = argsJson ? JSON.parse(argsJson) : {}
const platformatic = op.startsWith('plat-') ? await loadPlatformatic() : null

function out (obj) {
  process.stdout.write(JSON.stringify(obj, jsonReplacer) + '\n')
}

// ---------------------------------------------------------------- kafkajs

async function kafkajsConsume () {
  const kafka = kafkajsClient(bootstrap)
  const consumer = kafka.consumer({
    groupId: args.group,
    sessionTimeout: 10000,
    rebalanceTimeout: 10000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 100,
    allowAutoTopicCreation: false
  })
  const records = []
  let done
  const finished = new Promise(resolve => { done = resolve })
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [args.topic], fromBeginning: true })
    await consumer.run({
      autoCommit: true,
      autoCommitThreshold: 1,
      eachMessage: async ({ partition, message }) => {
        records.push({ partition, offset: Number(message.offset), value: message.value.toString() })
        if (records.length >= args.count) done()
      }
    })
    await withTimeout(finished, bound(args.limitMs || 30000), `kafkajs consumer (${records.length} of ${args.count})`)
  } finally {
    await consumer.disconnect()
  }
  const admin = kafka.admin()
  await admin.connect()
  try {
    const offs = await admin.fetchOffsets({ groupId: args.group, topics: [args.topic] })
    out({ ok: true, records, committed: offs[0].partitions.map(p => ({ partition: p.partition, offset: Number(p.offset), metadata: p.metadata })) })
  } finally {
    await admin.disconnect()
  }
}

async function kafkajsAdmin () {
  const kafka = kafkajsClient(bootstrap)
  const admin = kafka.admin()
  await admin.connect()
  try {
    const listed = await admin.listGroups()
    const described = await admin.describeGroups([args.group])
    const before = await admin.fetchOffsets({ groupId: args.group, topics: [args.topic] })
    await admin.setOffsets({ groupId: args.group, topic: args.topic, partitions: [{ partition: 0, offset: '3' }] })
    const afterSet = await admin.fetchOffsets({ groupId: args.group, topics: [args.topic] })
    await admin.resetOffsets({ groupId: args.group, topic: args.topic, earliest: true })
    const afterReset = await admin.fetchOffsets({ groupId: args.group, topics: [args.topic] })
    const deleted = await admin.deleteGroups([args.group])
    const afterDelete = await admin.describeGroups([args.group])
    const p = offs => offs[0].partitions.map(x => [x.partition, Number(x.offset)]).sort((a, b) => a[0] - b[0])
    out({
      ok: true,
      listed: listed.groups.map(g => [g.groupId, g.protocolType]),
      described: described.groups.map(g => ({ groupId: g.groupId, state: g.state, protocolType: g.protocolType, members: g.members.length })),
      before: p(before),
      afterSet: p(afterSet),
      afterReset: p(afterReset),
      deleted: deleted.map(d => [d.groupId, d.errorCode]),
      afterDelete: afterDelete.groups.map(g => g.state)
    })
  } finally {
    await admin.disconnect()
  }
}

// ---------------------------------------------------------------- @platformatic/kafka

async function platConsume () {
  const consumer = new platformatic.Consumer(platformaticOptions(bootstrap, {
    groupId: args.group,
    autocreateTopics: false,
    sessionTimeout: 10000,
    rebalanceTimeout: 10000,
    heartbeatInterval: 500
  }))
  const records = []
  try {
    const stream = await consumer.consume({
      topics: [args.topic],
      mode: 'committed',
      fallbackMode: 'earliest',
      autocommit: false,
      maxWaitTime: 100
    })
    const deadline = Date.now() + bound(args.limitMs || 30000)
    for await (const m of stream) {
      records.push({ partition: m.partition, offset: Number(m.offset), value: Buffer.from(m.value).toString() })
      await m.commit()
      if (records.length >= args.count) break
      if (Date.now() > deadline) throw new Error(`platformatic consumer: ${records.length} of ${args.count}`)
    }
    await stream.close()
    const committed = await consumer.listCommittedOffsets({ topics: [{ topic: args.topic, partitions: args.partitions }] })
    const c = committed.get(args.topic) || []
    out({ ok: true, records, committed: c.map((o, partition) => ({ partition, offset: Number(o) })) })
  } finally {
    await consumer.close(true)
  }
}

async function platAdmin () {
  const admin = new platformatic.Admin(platformaticOptions(bootstrap, {}))
  try {
    const listed = await admin.listGroups()
    const described = await admin.describeGroups({ groups: [args.group] })
    const g = described.get(args.group)
    const before = await admin.listConsumerGroupOffsets({ groups: [args.group] })
    await admin.alterConsumerGroupOffsets({ groupId: args.group, topics: [{ name: args.topic, partitionOffsets: [{ partition: 0, offset: 2n }] }] })
    const afterAlter = await admin.listConsumerGroupOffsets({ groups: [args.group] })
    await admin.deleteConsumerGroupOffsets({ groupId: args.group, topics: [{ name: args.topic, partitionIndexes: [1] }] })
    const afterDeleteOffsets = await admin.listConsumerGroupOffsets({ groups: [args.group] })
    await admin.deleteGroups({ groups: [args.group] })
    const listedAfter = await admin.listGroups()
    const offs = res => {
      const grp = res.find ? res.find(x => x.groupId === args.group) : res.get(args.group)
      const topics = grp.topics instanceof Map ? [...grp.topics.values()] : grp.topics
      const out = []
      for (const t of topics) {
        const parts = t.partitions instanceof Map ? [...t.partitions.values()] : t.partitions
        for (const p of parts) out.push([t.name, p.partitionIndex, Number(p.committedOffset)])
      }
      return out.sort((a, b) => a[1] - b[1])
    }
    out({
      ok: true,
      listed: [...listed.values()].map(x => [x.id, x.protocolType, x.state]),
      described: { id: g.id, state: g.state, protocolType: g.protocolType, members: g.members.size },
      before: offs(before),
      afterAlter: offs(afterAlter),
      afterDeleteOffsets: offs(afterDeleteOffsets),
      listedAfter: [...listedAfter.values()].map(x => x.id)
    })
  } finally {
    await admin.close()
  }
}

const ops = {
  'kafkajs-consume': kafkajsConsume,
  'kafkajs-admin': kafkajsAdmin,
  'plat-consume': platConsume,
  'plat-admin': platAdmin
}

function exitAfterFlush (code) {
  process.stdout.write('', () => process.exit(code))
}

const fn = ops[op]
if (!fn) {
  out({ ok: false, error: `unknown op ${op}` })
  process.exit(2)
}
try {
  await withTimeout(fn(), bound(args.limitMs ? args.limitMs + 20000 : 60000), op)
  exitAfterFlush(0)
} catch (e) {
  out({ ok: false, error: describeError(e), types: errorTypes(e) })
  exitAfterFlush(1)
}
void kafkajs
