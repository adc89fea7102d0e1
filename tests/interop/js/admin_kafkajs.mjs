// Admin with kafkajs 2.2.4: create (partitions, configs, validate-only),
// list, fetchTopicMetadata, createPartitions, alterConfigs, describeConfigs,
// deleteTopics, and the Kafka error type of every refused request.
//   node admin_kafkajs.mjs BOOTSTRAP
import assert from 'node:assert/strict'
import { kafkajs, kafkajsClient, runCases, expectError, done, bound } from './lib.mjs'

const bootstrap = process.argv[2]
const { ConfigResourceTypes } = kafkajs
const TOPIC = 2
assert.equal(ConfigResourceTypes.TOPIC, TOPIC)
const DYNAMIC_TOPIC = 1
const DEFAULT = 5
const A = 'kj-a'

const kafka = kafkajsClient(bootstrap)
const admin = kafka.admin({ retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 300 } })
await admin.connect()

async function metadata (names) {
  const md = await admin.fetchTopicMetadata({ topics: names })
  return Object.fromEntries(md.topics.map(t => [t.name, t]))
}

function checkPartitions (t, n, what) {
  const parts = [...t.partitions].sort((a, b) => a.partitionId - b.partitionId)
  assert.deepEqual(parts.map(p => p.partitionId), [...Array(n).keys()], `${what}: partition ids`)
  for (const p of parts) {
    assert.deepEqual([p.partitionErrorCode, p.leader, p.replicas, p.isr], [0, 1, [1], [1]],
      `${what}: partition ${p.partitionId} (error, leader, replicas, isr)`)
  }
}

async function configs (name) {
  const res = await admin.describeConfigs({ resources: [{ type: TOPIC, name }], includeSynonyms: false })
  assert.equal(res.resources.length, 1)
  assert.equal(res.resources[0].errorCode, 0, `describeConfigs ${name} error`)
  return Object.fromEntries(res.resources[0].configEntries.map(e => [e.configName, e]))
}

function checkEntry (entries, name, value, source, what) {
  assert.ok(entries[name], `${what}: ${name} missing from DescribeConfigs`)
  const e = entries[name]
  assert.deepEqual([e.configValue, e.configSource, e.isDefault], [value, source, source === DEFAULT],
    `${what}: ${name} (value, source, isDefault)`)
}

const cases = [
  ['create_list_metadata', async () => {
    const ok = await admin.createTopics({
      timeout: bound(10000),
      topics: [{ topic: A, numPartitions: 3, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '3600000' }, { name: 'cleanup.policy', value: 'compact' }] }]
    })
    assert.equal(ok, true, 'createTopics returns true')
    const v = await admin.createTopics({ validateOnly: true, waitForLeaders: false, topics: [{ topic: 'kj-v', numPartitions: 2 }] })
    assert.equal(v, true, 'validate-only createTopics')
    const names = await admin.listTopics()
    assert.ok(names.includes(A), `${A} listed: ${names}`)
    assert.ok(!names.includes('kj-v'), `validate-only topic must not exist: ${names}`)
    checkPartitions((await metadata([A]))[A], 3, A)
    const offs = await admin.fetchTopicOffsets(A)
    assert.deepEqual(offs.map(o => [o.partition, o.offset, o.high, o.low]).sort(), [[0, '0', '0', '0'], [1, '0', '0', '0'], [2, '0', '0', '0']], 'offsets of a new topic')
  }],
  ['create_errors', async () => {
    // kafkajs turns TOPIC_ALREADY_EXISTS into `false`
    assert.equal(await admin.createTopics({ topics: [{ topic: A, numPartitions: 1 }] }), false, 'createTopics of an existing topic returns false')
    const bad = [
      [{ topic: 'kj-zero', numPartitions: 0 }, 'INVALID_PARTITIONS'],
      [{ topic: 'kj-neg', numPartitions: -5 }, 'INVALID_PARTITIONS'],
      [{ topic: 'kj-rf3', numPartitions: 1, replicationFactor: 3 }, 'INVALID_REPLICATION_FACTOR'],
      [{ topic: '..', numPartitions: 1 }, 'INVALID_TOPIC_EXCEPTION'],
      [{ topic: 'bad/name', numPartitions: 1 }, 'INVALID_TOPIC_EXCEPTION'],
      [{ topic: 'a b', numPartitions: 1 }, 'INVALID_TOPIC_EXCEPTION'],
      [{ topic: 'z'.repeat(250), numPartitions: 1 }, 'INVALID_TOPIC_EXCEPTION'],
      [{ topic: 'kj-badkey', numPartitions: 1, configEntries: [{ name: 'no.such.config', value: '1' }] }, 'INVALID_CONFIG'],
      [{ topic: 'kj-badval', numPartitions: 1, configEntries: [{ name: 'retention.ms', value: 'abc' }] }, 'INVALID_CONFIG']
    ]
    for (const [t, type] of bad) {
      await expectError(admin.createTopics({ waitForLeaders: false, topics: [t] }), type, `create ${t.topic.slice(0, 40)}`)
    }
    const names = await admin.listTopics()
    for (const [t] of bad) assert.ok(!names.includes(t.topic), `refused topic ${t.topic.slice(0, 40)} exists`)
  }],
  ['create_partitions', async () => {
    await admin.createPartitions({ topicPartitions: [{ topic: A, count: 4 }] })
    checkPartitions((await metadata([A]))[A], 4, `${A} after createPartitions`)
    await expectError(admin.createPartitions({ topicPartitions: [{ topic: A, count: 2 }] }), 'INVALID_PARTITIONS', 'createPartitions 4 -> 2')
    await expectError(admin.createPartitions({ topicPartitions: [{ topic: A, count: 4 }] }), 'INVALID_PARTITIONS', 'createPartitions 4 -> 4')
    checkPartitions((await metadata([A]))[A], 4, `${A} after refused createPartitions`)
  }],
  ['describe_configs', async () => {
    const e = await configs(A)
    checkEntry(e, 'retention.ms', '3600000', DYNAMIC_TOPIC, A)
    checkEntry(e, 'cleanup.policy', 'compact', DYNAMIC_TOPIC, A)
    checkEntry(e, 'segment.bytes', '1073741824', DEFAULT, A)
    checkEntry(e, 'max.message.bytes', '1048588', DEFAULT, A)
    await expectError(admin.describeConfigs({ resources: [{ type: TOPIC, name: 'kj-missing' }] }), 'UNKNOWN_TOPIC_OR_PARTITION', 'describeConfigs of a missing topic')
  }],
  ['alter_configs', async () => {
    await admin.alterConfigs({ validateOnly: true, resources: [{ type: TOPIC, name: A, configEntries: [{ name: 'retention.ms', value: '1' }] }] })
    checkEntry(await configs(A), 'retention.ms', '3600000', DYNAMIC_TOPIC, 'after validate-only alterConfigs')
    await admin.alterConfigs({ resources: [{ type: TOPIC, name: A, configEntries: [{ name: 'retention.ms', value: '86400000' }, { name: 'max.message.bytes', value: '4000' }] }] })
    const e = await configs(A)
    checkEntry(e, 'retention.ms', '86400000', DYNAMIC_TOPIC, 'after alterConfigs')
    checkEntry(e, 'max.message.bytes', '4000', DYNAMIC_TOPIC, 'after alterConfigs')
    checkEntry(e, 'cleanup.policy', 'delete', DEFAULT, 'after alterConfigs (replaced away)')
    await expectError(admin.alterConfigs({ resources: [{ type: TOPIC, name: A, configEntries: [{ name: 'retention.ms', value: 'abc' }] }] }), 'INVALID_CONFIG', 'alterConfigs retention.ms=abc')
    await expectError(admin.alterConfigs({ resources: [{ type: TOPIC, name: A, configEntries: [{ name: 'no.such.config', value: '1' }] }] }), 'INVALID_CONFIG', 'alterConfigs unknown key')
    await expectError(admin.alterConfigs({ resources: [{ type: TOPIC, name: 'kj-missing', configEntries: [{ name: 'retention.ms', value: '1' }] }] }), 'UNKNOWN_TOPIC_OR_PARTITION', 'alterConfigs of a missing topic')
    checkEntry(await configs(A), 'retention.ms', '86400000', DYNAMIC_TOPIC, 'after refused alterConfigs')
  }],
  ['metadata_missing_topic', async () => {
    await expectError(admin.fetchTopicMetadata({ topics: ['kj-missing'] }), 'UNKNOWN_TOPIC_OR_PARTITION', 'fetchTopicMetadata of a missing topic')
  }],
  ['delete_topics', async () => {
    await admin.deleteTopics({ topics: [A], timeout: bound(10000) })
    const deadline = Date.now() + bound(10000)
    while ((await admin.listTopics()).includes(A)) {
      assert.ok(Date.now() < deadline, `${A} still listed after deleteTopics`)
      await new Promise(resolve => setTimeout(resolve, 100))
    }
    await expectError(admin.deleteTopics({ topics: ['kj-missing'], timeout: bound(5000) }), 'UNKNOWN_TOPIC_OR_PARTITION', 'deleteTopics of a missing topic')
  }]
]

let failed = 1
try {
  failed = await runCases(cases)
} finally {
  await admin.disconnect().catch(() => {})
  done(failed ? 1 : 0)
}
