// Admin with @platformatic/kafka 1.35.0 (high, flexible API versions):
// createTopics (CreateTopics v7 returns id, partitions, RF, configs),
// validate-only through the raw v7 API, listTopics, metadata (topic ids),
// createPartitions, alterConfigs, incrementalAlterConfigs, describeConfigs,
// deleteTopics by name and by id (DeleteTopics v6), UNKNOWN_TOPIC_ID.
//   node admin_platformatic.mjs BOOTSTRAP NUM_PARTITIONS_DEFAULT
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { loadPlatformatic, platformaticOptions, runCases, expectError, errorTypes, done, bound } from './lib.mjs'

const platformatic = await loadPlatformatic()
const bootstrap = process.argv[2]
const defaultPartitions = Number(process.argv[3] || 1)
const [host, port] = [bootstrap.split(':')[0], Number(bootstrap.split(':')[1])]
const { Admin, Connection, ConfigResourceTypes, ConfigSources, IncrementalAlterConfigOperationTypes: OP } = platformatic
const { createTopicsV7, deleteTopicsV6 } = platformatic
const TOPIC = ConfigResourceTypes.TOPIC
const A = 'pk-a'
const NIL = '00000000-0000-0000-0000-000000000000'

const admin = new Admin(platformaticOptions(bootstrap))

async function rawConnection () {
  const c = new Connection('samsa-interop-raw')
  await c.connect(host, port)
  return c
}

async function meta (names) {
  return await admin.metadata({ topics: names, forceUpdate: true })
}

function checkPartitions (t, n, what) {
  assert.equal(t.partitionsCount, n, `${what}: partition count`)
  t.partitions.forEach((p, i) => {
    assert.deepEqual([p.leader, p.replicas, p.isr, p.offlineReplicas], [1, [1], [1], []], `${what}: partition ${i} (leader, replicas, isr, offline)`)
    assert.ok(p.leaderEpoch >= 0, `${what}: partition ${i} leader epoch ${p.leaderEpoch}`)
  })
}

async function configs (name) {
  const res = await admin.describeConfigs({ resources: [{ resourceType: TOPIC, resourceName: name }], includeSynonyms: true })
  assert.equal(res.length, 1)
  return Object.fromEntries(res[0].configs.map(c => [c.name, c]))
}

function checkEntry (entries, name, value, source, what) {
  assert.ok(entries[name], `${what}: ${name} missing from DescribeConfigs`)
  assert.deepEqual([entries[name].value, entries[name].configSource], [value, source], `${what}: ${name} (value, source)`)
}

let aId = null

const cases = [
  ['create_list_metadata', async () => {
    const created = await admin.createTopics({ topics: [A], partitions: 3, replicas: 1, configs: [{ name: 'retention.ms', value: '3600000' }, { name: 'cleanup.policy', value: 'compact' }] })
    assert.equal(created.length, 1)
    const c = created[0]
    assert.deepEqual([c.name, c.partitions, c.replicas], [A, 3, 1], 'CreateTopics v7 result (name, partitions, replicas)')
    assert.ok(c.id && c.id !== NIL, `CreateTopics v7 returns a topic id: ${c.id}`)
    assert.equal(c.configuration['retention.ms'], '3600000', 'CreateTopics v7 returns the configs: retention.ms')
    assert.equal(c.configuration['cleanup.policy'], 'compact', 'CreateTopics v7 returns the configs: cleanup.policy')
    assert.equal(c.configuration['segment.bytes'], '1073741824', 'CreateTopics v7 returns the default segment.bytes')
    aId = c.id
    // defaults: partitions -1 and replicas -1 mean the broker's defaults
    const d = await admin.createTopics({ topics: ['pk-default'] })
    assert.deepEqual([d[0].partitions, d[0].replicas], [defaultPartitions, 1], 'CreateTopics with -1/-1 takes num.partitions and default.replication.factor')
    const names = await admin.listTopics()
    assert.ok(names.includes(A) && names.includes('pk-default'), `listed: ${names}`)
    const md = await meta([A, 'pk-default'])
    assert.equal(md.topics.get(A).id, aId, 'Metadata topic id equals the CreateTopics id')
    checkPartitions(md.topics.get(A), 3, A)
    checkPartitions(md.topics.get('pk-default'), defaultPartitions, 'pk-default')
    assert.deepEqual([...md.brokers.keys()], [1], 'brokers')
    assert.deepEqual([md.brokers.get(1).host, md.brokers.get(1).port], [host, port], 'broker address')
    assert.equal(md.controllerId, 1, 'controller id')
  }],
  ['create_validate_only_raw_v7', async () => {
    const conn = await rawConnection()
    try {
      const res = await createTopicsV7.api.async(conn, [{ name: 'pk-v', numPartitions: 5, replicationFactor: 1, assignments: [], configs: [{ name: 'retention.ms', value: '5000' }] }], bound(10000), true)
      const t = res.topics[0]
      assert.deepEqual([t.name, t.errorCode, t.numPartitions, t.replicationFactor], ['pk-v', 0, 5, 1], 'validate-only CreateTopics v7 result')
      const e = await expectError(createTopicsV7.api.async(conn, [{ name: 'pk-v2', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [{ name: 'retention.ms', value: 'abc' }] }], bound(10000), true), 'INVALID_CONFIG', 'validate-only CreateTopics with retention.ms=abc')
      assert.ok(e)
    } finally {
      await conn.close()
    }
    const names = await admin.listTopics()
    assert.ok(!names.includes('pk-v') && !names.includes('pk-v2'), `validate-only topics must not exist: ${names}`)
  }],
  ['create_errors', async () => {
    const bad = [
      [{ topics: [A], partitions: 1 }, 'TOPIC_ALREADY_EXISTS'],
      [{ topics: ['pk-zero'], partitions: 0 }, 'INVALID_PARTITIONS'],
      [{ topics: ['pk-neg'], partitions: -5 }, 'INVALID_PARTITIONS'],
      [{ topics: ['pk-rf3'], partitions: 1, replicas: 3 }, 'INVALID_REPLICATION_FACTOR'],
      [{ topics: ['..'], partitions: 1 }, 'INVALID_TOPIC_EXCEPTION'],
      [{ topics: ['bad/name'], partitions: 1 }, 'INVALID_TOPIC_EXCEPTION'],
      [{ topics: ['q'.repeat(250)], partitions: 1 }, 'INVALID_TOPIC_EXCEPTION'],
      [{ topics: ['pk-badkey'], partitions: 1, configs: [{ name: 'no.such.config', value: '1' }] }, 'INVALID_CONFIG'],
      [{ topics: ['pk-badval'], partitions: 1, configs: [{ name: 'retention.ms', value: 'abc' }] }, 'INVALID_CONFIG']
    ]
    for (const [opts, type] of bad) {
      await expectError(admin.createTopics(opts), type, `create ${opts.topics[0].slice(0, 40)}`)
    }
    // 'a b' never reaches the broker: this client refuses names with spaces itself
    const names = await admin.listTopics()
    for (const [opts] of bad.slice(1)) assert.ok(!names.includes(opts.topics[0]), `refused topic ${opts.topics[0].slice(0, 40)} exists`)
  }],
  ['create_partitions', async () => {
    await admin.createPartitions({ topics: [{ name: A, count: 4 }] })
    checkPartitions((await meta([A])).topics.get(A), 4, `${A} after createPartitions`)
    await admin.createPartitions({ topics: [{ name: A, count: 9 }], validateOnly: true })
    checkPartitions((await meta([A])).topics.get(A), 4, `${A} after validate-only createPartitions`)
    await expectError(admin.createPartitions({ topics: [{ name: A, count: 3 }] }), 'INVALID_PARTITIONS', 'createPartitions 4 -> 3')
    await expectError(admin.createPartitions({ topics: [{ name: 'pk-missing', count: 3 }] }), 'UNKNOWN_TOPIC_OR_PARTITION', 'createPartitions of a missing topic')
  }],
  ['describe_configs', async () => {
    const e = await configs(A)
    checkEntry(e, 'retention.ms', '3600000', ConfigSources.TOPIC_CONFIG, A)
    checkEntry(e, 'cleanup.policy', 'compact', ConfigSources.TOPIC_CONFIG, A)
    checkEntry(e, 'segment.bytes', '1073741824', ConfigSources.DEFAULT_CONFIG, A)
    assert.deepEqual(e['retention.ms'].synonyms[0], { name: 'retention.ms', value: '3600000', source: ConfigSources.TOPIC_CONFIG }, 'first synonym of retention.ms is the topic override')
    await expectError(admin.describeConfigs({ resources: [{ resourceType: TOPIC, resourceName: 'pk-missing' }] }), 'UNKNOWN_TOPIC_OR_PARTITION', 'describeConfigs of a missing topic')
  }],
  ['incremental_alter_configs', async () => {
    await admin.incrementalAlterConfigs({ resources: [{ resourceType: TOPIC, resourceName: A, configs: [{ name: 'retention.ms', configOperation: OP.SET, value: '120000' }, { name: 'max.message.bytes', configOperation: OP.SET, value: '3000' }] }] })
    let e = await configs(A)
    checkEntry(e, 'retention.ms', '120000', ConfigSources.TOPIC_CONFIG, 'after SET')
    checkEntry(e, 'max.message.bytes', '3000', ConfigSources.TOPIC_CONFIG, 'after SET')
    checkEntry(e, 'cleanup.policy', 'compact', ConfigSources.TOPIC_CONFIG, 'incremental alter keeps the others')
    await admin.incrementalAlterConfigs({ resources: [{ resourceType: TOPIC, resourceName: A, configs: [{ name: 'cleanup.policy', configOperation: OP.APPEND, value: 'delete' }, { name: 'max.message.bytes', configOperation: OP.DELETE }] }] })
    e = await configs(A)
    checkEntry(e, 'cleanup.policy', 'compact,delete', ConfigSources.TOPIC_CONFIG, 'after APPEND')
    checkEntry(e, 'max.message.bytes', '1048588', ConfigSources.DEFAULT_CONFIG, 'after DELETE')
    await admin.incrementalAlterConfigs({ resources: [{ resourceType: TOPIC, resourceName: A, configs: [{ name: 'cleanup.policy', configOperation: OP.SUBTRACT, value: 'compact' }] }] })
    checkEntry(await configs(A), 'cleanup.policy', 'delete', ConfigSources.TOPIC_CONFIG, 'after SUBTRACT')
    await admin.incrementalAlterConfigs({ validateOnly: true, resources: [{ resourceType: TOPIC, resourceName: A, configs: [{ name: 'retention.ms', configOperation: OP.SET, value: '1' }] }] })
    checkEntry(await configs(A), 'retention.ms', '120000', ConfigSources.TOPIC_CONFIG, 'after validate-only')
    await expectError(admin.incrementalAlterConfigs({ resources: [{ resourceType: TOPIC, resourceName: A, configs: [{ name: 'retention.ms', configOperation: OP.SET, value: 'abc' }] }] }), 'INVALID_CONFIG', 'SET retention.ms=abc')
    await expectError(admin.incrementalAlterConfigs({ resources: [{ resourceType: TOPIC, resourceName: A, configs: [{ name: 'no.such.config', configOperation: OP.SET, value: '1' }] }] }), 'INVALID_CONFIG', 'SET of an unknown key')
    await expectError(admin.incrementalAlterConfigs({ resources: [{ resourceType: TOPIC, resourceName: A, configs: [{ name: 'retention.ms', configOperation: OP.APPEND, value: '5' }] }] }), 'INVALID_CONFIG', 'APPEND to a non-list config')
    await expectError(admin.incrementalAlterConfigs({ resources: [{ resourceType: TOPIC, resourceName: 'pk-missing', configs: [{ name: 'retention.ms', configOperation: OP.SET, value: '1' }] }] }), 'UNKNOWN_TOPIC_OR_PARTITION', 'incremental alter of a missing topic')
    checkEntry(await configs(A), 'retention.ms', '120000', ConfigSources.TOPIC_CONFIG, 'after refused alters')
  }],
  ['alter_configs', async () => {
    await admin.alterConfigs({ resources: [{ resourceType: TOPIC, resourceName: A, configs: [{ name: 'retention.ms', value: '240000' }] }] })
    const e = await configs(A)
    checkEntry(e, 'retention.ms', '240000', ConfigSources.TOPIC_CONFIG, 'after alterConfigs')
    checkEntry(e, 'cleanup.policy', 'delete', ConfigSources.DEFAULT_CONFIG, 'after alterConfigs (replaced away)')
    await expectError(admin.alterConfigs({ resources: [{ resourceType: TOPIC, resourceName: A, configs: [{ name: 'retention.ms', value: 'abc' }] }] }), 'INVALID_CONFIG', 'alterConfigs retention.ms=abc')
  }],
  ['delete_by_name_and_id', async () => {
    await admin.deleteTopics({ topics: ['pk-default'] })
    await expectError(admin.deleteTopics({ topics: ['pk-missing'] }), 'UNKNOWN_TOPIC_OR_PARTITION', 'deleteTopics of a missing topic')
    const conn = await rawConnection()
    try {
      const rid = randomUUID()
      const e = await expectError(deleteTopicsV6.api.async(conn, [{ name: null, topicId: rid }], bound(10000)), 'UNKNOWN_TOPIC_ID', 'DeleteTopics v6 by a random id')
      const r = e.response.responses[0]
      assert.deepEqual([r.topicId, r.errorCode], [rid, 100], 'DeleteTopics v6 echoes the unknown id with UNKNOWN_TOPIC_ID')
      const res = await deleteTopicsV6.api.async(conn, [{ name: null, topicId: aId }], bound(10000))
      assert.deepEqual(res.responses.map(x => [x.name, x.topicId, x.errorCode]), [[A, aId, 0]], 'DeleteTopics v6 by id names the deleted topic')
    } finally {
      await conn.close()
    }
    const deadline = Date.now() + bound(10000)
    for (;;) {
      const names = await admin.listTopics()
      if (!names.includes(A) && !names.includes('pk-default')) break
      assert.ok(Date.now() < deadline, `deleted topics still listed: ${names}`)
      await new Promise(resolve => setTimeout(resolve, 100))
    }
    try {
      await meta([A])
      assert.fail('metadata of a deleted topic succeeded')
    } catch (e) {
      // this client turns Metadata's UNKNOWN_TOPIC_OR_PARTITION (3) into a UserError
      assert.equal(e.message, `Unknown topic ${A}.`, `metadata of a deleted topic: ${e.message} ${errorTypes(e)}`)
    }
  }]
]

let failed = 1
try {
  failed = await runCases(cases)
} finally {
  await admin.close().catch(() => {})
  done(failed ? 1 : 0)
}
