// KIP-848 consumer groups with @platformatic/kafka 1.35.0 (groupProtocol
// 'consumer': ConsumerGroupHeartbeat), for cases/95_test_groups_kip848.py:
//   node groups_kip848.mjs OP BOOTSTRAP 'JSON args'
//
// Ops:
//   member   {topic, group, clientId, limitMs, assignor}
//            a long-lived member, driven through stdin/stdout JSON lines.
//            It consumes in 'committed' mode (fallback earliest), commits
//            every record right after reading it (message.commit(): an
//            OffsetCommit v9 with its member epoch) and prints
//              {event: 'record', partition, offset, key, value}
//              {event: 'assignment', memberId, epoch, assignment: {topic: [p...]}}
//            (the latter whenever its assignment changes). A line 'close'
//            on stdin (or EOF) closes the stream and leaves the group
//            (heartbeat with epoch -1), then prints {event: 'closed', ok}.
//            assignor, when given, is the client's groupRemoteAssignor
//            (ConsumerGroupHeartbeat's ServerAssignor).
//            Errors print {event: 'error', error}.
import { createInterface } from 'node:readline'
import { b64, bound, loadPlatformatic, withTimeout, describeError, platformaticOptions, jsonReplacer } from './lib.mjs'

const [op, bootstrap, argsJson] = process.argv.slice(2)
const args = argsJson ? JSON.parse(argsJson) : {}
const platformatic = await loadPlatformatic()

function out (obj) {
  process.stdout.write(JSON.stringify(obj, jsonReplacer) + '\n')
}

function assignmentOf (consumer) {
  const res = {}
  for (const a of consumer.assignments || []) {
    if (a.topic === undefined) continue
    res[a.topic] = [...a.partitions].sort((x, y) => x - y)
  }
  return res
}

async function member () {
  const consumer = new platformatic.Consumer(platformaticOptions(bootstrap, {
    clientId: args.clientId || 'samsa-kip848',
    groupId: args.group,
    groupProtocol: 'consumer',
    autocreateTopics: false,
    sessionTimeout: 10000,
    rebalanceTimeout: 10000,
    heartbeatInterval: 500,
    ...(args.assignor ? { groupRemoteAssignor: args.assignor } : {})
  }))
  consumer.on('error', e => out({ event: 'error', error: describeError(e) }))
  let closing = false
  let last = ''
  const timer = setInterval(() => {
    const a = assignmentOf(consumer)
    const s = JSON.stringify(a)
    if (s !== last) {
      last = s
      out({ event: 'assignment', memberId: consumer.memberId, assignment: a })
    }
  }, 50)
  let stream = null
  const rl = createInterface({ input: process.stdin })
  const closed = new Promise(resolve => {
    rl.on('line', l => { if (l.trim() === 'close') resolve() })
    rl.once('close', resolve)
  })
  try {
    stream = await withTimeout(consumer.consume({
      topics: [args.topic],
      mode: 'committed',
      fallbackMode: 'earliest',
      autocommit: false,
      maxWaitTime: 100
    }), bound(args.limitMs || 30000), 'consume')
    const reading = (async () => {
      for await (const m of stream) {
        await m.commit()
        out({ event: 'record', partition: m.partition, offset: Number(m.offset), key: b64(m.key), value: b64(m.value) })
        if (closing) break
      }
    })()
    reading.catch(e => out({ event: 'error', error: describeError(e) }))
    await closed
    closing = true
    clearInterval(timer)
    await withTimeout(stream.close(), bound(10000), 'stream close')
    stream = null
    await withTimeout(consumer.close(true), bound(10000), 'consumer close')
    out({ event: 'closed', ok: true })
  } catch (e) {
    out({ event: 'closed', ok: false, error: describeError(e) })
  } finally {
    clearInterval(timer)
    rl.close()
    if (stream) await stream.close().catch(() => {})
    await consumer.close(true).catch(() => {})
  }
}

if (op === 'member') await member()
else out({ ok: false, error: `unknown op ${op}` })
process.exit(0)
