// Consumer groups with the Node clients (kafkajs 2.2.4, @platformatic/kafka
// 1.35.0), as commands for cases/93_test_groups_js.py:
//   node groups_js.mjs OP BOOTSTRAP 'JSON args'
// prints one JSON result line {ok: true, ...} or {ok: false, error, types,
// codes} last (codes: the numeric Kafka error codes found in the error).
// Keys and values are base64 (null stays null); offsets are numbers.
//
// Ops:
//   kafkajs-consume  {topic, group, count, fromBeginning=true, limitMs,
//                    hold=false}
//                    subscribe + run with kafkajs's own commits (autoCommit,
//                    threshold 1), until `count` records arrived; then
//                    disconnect (commit + LeaveGroup). With hold, prints
//                    {event: 'ready', memberId, assignment} first and stays
//                    a member (heartbeating) until a line arrives on stdin.
//   kafkajs-join     {topic, group, limitMs}
//                    one join attempt, no restart on a crash: {joined,
//                    crash: {types, codes} or null}
//   plat-consume     {topic, group, count, fallbackMode='earliest',
//                    limitMs, hold=false}
//                    Consumer (groupProtocol 'classic': JoinGroup/SyncGroup,
//                    never KIP-848's ConsumerGroupHeartbeat) .consume in
//                    'committed' mode, each message committed with
//                    message.commit(); then close (LeaveGroup). hold as above.
//   kafkajs-admin    {actions: [[name, args], ...]}
//                    names: listGroups, describeGroups {groups},
//                    fetchOffsets {group, topic}, setOffsets {group, topic,
//                    partitions: [[p, offset]]}, resetOffsets {group, topic,
//                    earliest}, deleteGroups {groups}
//   plat-admin       {actions: [[name, args], ...]}
//                    names: listGroups, describeGroups {groups},
//                    listConsumerGroupOffsets {group},
//                    alterConsumerGroupOffsets {group, topic,
//                    partitions: [[p, offset]]}, deleteConsumerGroupOffsets
//                    {group, topic, partitions: [p]}, deleteGroups {groups}
// An admin op answers {ok: true, results: [...]}, one per action in order:
// {ok: true, value} or {ok: false, error, types, codes, ms}. Every action,
// and the whole op, is bounded.
import { createInterface } from 'node:readline'
import { b64, bound, kafkajs, loadPlatformatic, withTimeout, errorTypes, describeError, kafkajsClient, platformaticOptions, jsonReplacer } from './lib.mjs'

const [op, bootstrap, argsJson] = process.argv.slice(2)
const args = argsJson ? JSON.parse(argsJson) : {}
const platformatic = op && op.startsWith('plat-') ? await loadPlatformatic() : null
const limitMs = bound(args.limitMs || 30000)

function out (obj) {
  process.stdout.write(JSON.stringify(obj, jsonReplacer) + '\n')
}

// The numeric Kafka error codes an error carries, through kafkajs's
// wrappers (KafkaJSDeleteGroupsError.groups[].errorCode, .code) and
// platformatic's MultipleErrors / ProtocolError (apiCode).
function errorCodes (e) {
  const codes = new Set()
  const seen = new Set()
  const visit = x => {
    if (!x || typeof x !== 'object' || seen.has(x)) return
    seen.add(x)
    for (const k of ['errorCode', 'apiCode', 'code']) {
      if (typeof x[k] === 'number' && x[k] !== 0) codes.add(x[k])
    }
    for (const k of ['originalError', 'cause', 'error']) visit(x[k])
    for (const k of ['errors', 'groups']) {
      const v = x[k]
      if (Array.isArray(v)) v.forEach(visit)
      else if (v && typeof v === 'object') Object.values(v).forEach(visit)
    }
  }
  visit(e)
  return [...codes].sort((a, b) => a - b)
}

function failure (e, extra = {}) {
  return { ok: false, error: describeError(e), types: errorTypes(e), codes: errorCodes(e), ...extra }
}

// Resolves when a line (or EOF) arrives on stdin: the Python side's "stop".
function stdinLine () {
  return new Promise(resolve => {
    const rl = createInterface({ input: process.stdin })
    const finish = () => { rl.close(); resolve() }
    rl.once('line', finish)
    rl.once('close', finish)
  })
}

function record (partition, offset, key, value) {
  return { partition, offset: Number(offset), key: b64(key), value: b64(value) }
}

async function runActions (table, actions) {
  const results = []
  for (const [name, a] of actions) {
    const fn = table[name]
    const t0 = Date.now()
    if (!fn) {
      results.push({ ok: false, error: `unknown action ${name}`, types: [], codes: [] })
      continue
    }
    try {
      const value = await withTimeout(fn(a || {}), bound(20000), `action ${name}`)
      results.push({ ok: true, value, ms: Date.now() - t0 })
    } catch (e) {
      results.push(failure(e, { ms: Date.now() - t0 }))
    }
  }
  return results
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
  let join = null
  consumer.on(consumer.events.GROUP_JOIN, e => { join = e.payload })
  let done
  const finished = new Promise(resolve => { done = resolve })
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [args.topic], fromBeginning: args.fromBeginning !== false })
    await consumer.run({
      autoCommit: true,
      autoCommitThreshold: 1,
      eachMessage: async ({ partition, message }) => {
        records.push(record(partition, message.offset, message.key, message.value))
        if (records.length >= args.count) done()
      }
    })
    if (args.count > 0) await withTimeout(finished, limitMs, `kafkajs consumer (${records.length} of ${args.count})`)
    if (args.hold) {
      const t0 = Date.now()
      while (!join && Date.now() - t0 < limitMs) await new Promise(resolve => setTimeout(resolve, 20))
      out({ event: 'ready', memberId: join && join.memberId, isLeader: join && join.isLeader, assignment: join && join.memberAssignment, records: records.length })
      await stdinLine()
    }
  } finally {
    await consumer.disconnect()
  }
  out({ ok: true, records, memberId: join && join.memberId, assignment: join && join.memberAssignment })
}

async function kafkajsJoin () {
  const kafka = kafkajsClient(bootstrap)
  const consumer = kafka.consumer({
    groupId: args.group,
    sessionTimeout: 10000,
    rebalanceTimeout: 10000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 100,
    allowAutoTopicCreation: false,
    retry: { retries: 0, restartOnFailure: async () => false }
  })
  let settle
  const settled = new Promise(resolve => { settle = resolve })
  consumer.on(consumer.events.GROUP_JOIN, e => settle({ joined: true, memberId: e.payload.memberId, crash: null }))
  consumer.on(consumer.events.CRASH, e => settle({ joined: false, crash: { error: describeError(e.payload.error), types: errorTypes(e.payload.error), codes: errorCodes(e.payload.error) } }))
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [args.topic], fromBeginning: true })
    try {
      await consumer.run({ eachMessage: async () => {} })
    } catch (e) {
      settle({ joined: false, crash: { error: describeError(e), types: errorTypes(e), codes: errorCodes(e) } })
    }
    out({ ok: true, ...await withTimeout(settled, limitMs, 'kafkajs join') })
  } finally {
    await consumer.disconnect()
  }
}

function kafkajsGroup (g) {
  const { MemberAssignment, MemberMetadata } = kafkajs.AssignerProtocol
  return {
    groupId: g.groupId,
    state: g.state,
    protocolType: g.protocolType,
    protocol: g.protocol,
    errorCode: g.errorCode,
    members: g.members.map(m => {
      const a = m.memberAssignment && m.memberAssignment.length ? MemberAssignment.decode(m.memberAssignment) : null
      const md = m.memberMetadata && m.memberMetadata.length ? MemberMetadata.decode(m.memberMetadata) : null
      return {
        memberId: m.memberId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        topics: md ? md.topics : null,
        assignment: a ? a.assignment : null
      }
    })
  }
}

async function kafkajsAdmin () {
  const kafka = kafkajsClient(bootstrap)
  const admin = kafka.admin()
  await admin.connect()
  const offsets = res => res.flatMap(t => t.partitions.map(p => [t.topic, p.partition, Number(p.offset), p.metadata]))
    .sort((a, b) => a[0] === b[0] ? a[1] - b[1] : (a[0] < b[0] ? -1 : 1))
  const table = {
    listGroups: async () => (await admin.listGroups()).groups.map(g => [g.groupId, g.protocolType]).sort(),
    describeGroups: async a => (await admin.describeGroups(a.groups)).groups.map(kafkajsGroup),
    fetchOffsets: async a => offsets(await admin.fetchOffsets({ groupId: a.group, topics: [a.topic] })),
    setOffsets: async a => {
      await admin.setOffsets({ groupId: a.group, topic: a.topic, partitions: a.partitions.map(([partition, offset]) => ({ partition, offset: String(offset) })) })
      return null
    },
    resetOffsets: async a => {
      await admin.resetOffsets({ groupId: a.group, topic: a.topic, earliest: !!a.earliest })
      return null
    },
    deleteGroups: async a => (await admin.deleteGroups(a.groups)).map(d => [d.groupId, d.errorCode])
  }
  try {
    out({ ok: true, results: await runActions(table, args.actions || []) })
  } finally {
    await admin.disconnect()
  }
}

// ---------------------------------------------------------------- @platformatic/kafka

async function platConsume () {
  const consumer = new platformatic.Consumer(platformaticOptions(bootstrap, {
    groupId: args.group,
    groupProtocol: 'classic', // the KIP-848 'consumer' protocol: groups_kip848.mjs
    autocreateTopics: false,
    sessionTimeout: 10000,
    rebalanceTimeout: 10000,
    heartbeatInterval: 500
  }))
  const records = []
  let stream = null
  try {
    stream = await consumer.consume({
      topics: [args.topic],
      mode: 'committed',
      fallbackMode: args.fallbackMode || 'earliest',
      autocommit: false,
      maxWaitTime: 100
    })
    if (args.count > 0) {
      const read = (async () => {
        for await (const m of stream) {
          records.push(record(m.partition, m.offset, m.key, m.value))
          await m.commit()
          if (records.length >= args.count) break
        }
      })()
      await withTimeout(read, limitMs, `platformatic consumer (${records.length} of ${args.count})`)
    }
    if (args.hold) {
      const t0 = Date.now()
      while (!consumer.assignments && Date.now() - t0 < limitMs) await new Promise(resolve => setTimeout(resolve, 20))
      out({ event: 'ready', memberId: consumer.memberId, assignment: consumer.assignments, records: records.length })
      await stdinLine()
    }
    const memberId = consumer.memberId
    await stream.close()
    stream = null
    out({ ok: true, records, memberId })
  } finally {
    if (stream) await stream.close().catch(() => {})
    await consumer.close(true)
  }
}

function platGroup (g) {
  return {
    groupId: g.id,
    state: g.state,
    protocolType: g.protocolType,
    protocol: g.protocol,
    members: [...g.members.values()].map(m => ({
      memberId: m.id,
      clientId: m.clientId,
      clientHost: m.clientHost,
      topics: m.metadata ? m.metadata.topics : null,
      assignment: m.assignments ? Object.fromEntries([...m.assignments.values()].map(x => [x.topic, x.partitions])) : null
    }))
  }
}

async function platAdmin () {
  const admin = new platformatic.Admin(platformaticOptions(bootstrap, {}))
  const offsets = (res, group) => {
    const grp = res.find(x => x.groupId === group)
    const rows = []
    for (const t of grp ? grp.topics : []) {
      for (const p of t.partitions) rows.push([t.name, p.partitionIndex, Number(p.committedOffset), p.metadata])
    }
    return rows.sort((a, b) => a[0] === b[0] ? a[1] - b[1] : (a[0] < b[0] ? -1 : 1))
  }
  const table = {
    listGroups: async () => [...(await admin.listGroups()).values()].map(x => [x.id, x.protocolType, x.state]).sort(),
    describeGroups: async a => [...(await admin.describeGroups({ groups: a.groups })).values()].map(platGroup),
    listConsumerGroupOffsets: async a => offsets(await admin.listConsumerGroupOffsets({ groups: [a.group] }), a.group),
    alterConsumerGroupOffsets: async a => {
      await admin.alterConsumerGroupOffsets({
        groupId: a.group,
        topics: [{ name: a.topic, partitionOffsets: a.partitions.map(([partition, offset]) => ({ partition, offset: BigInt(offset) })) }]
      })
      return null
    },
    deleteConsumerGroupOffsets: async a => {
      await admin.deleteConsumerGroupOffsets({ groupId: a.group, topics: [{ name: a.topic, partitionIndexes: a.partitions }] })
      return null
    },
    deleteGroups: async a => {
      await admin.deleteGroups({ groups: a.groups })
      return null
    }
  }
  try {
    out({ ok: true, results: await runActions(table, args.actions || []) })
  } finally {
    await admin.close()
  }
}

const ops = {
  'kafkajs-consume': kafkajsConsume,
  'kafkajs-join': kafkajsJoin,
  'kafkajs-admin': kafkajsAdmin,
  'plat-consume': platConsume,
  'plat-admin': platAdmin
}

function exitAfterFlush (code) {
  // Client teardown must never hang a test.
  process.stdout.write('', () => process.exit(code))
}

const fn = ops[op]
if (!fn) {
  out({ ok: false, error: `unknown op ${op}` })
  process.exit(2)
}
try {
  // hold waits for the Python side, which bounds that wait itself
  await withTimeout(fn(), args.hold ? bound(120000) : limitMs + bound(30000), op)
  exitAfterFlush(0)
} catch (e) {
  out(failure(e))
  exitAfterFlush(1)
}
