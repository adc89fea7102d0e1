// Broker and topic configs with kafkajs 2.2.4 (DescribeConfigs v2,
// AlterConfigs v1), run by cases/25_test_configs_admin.py against a
// server where broker 1 has message.max.bytes=5000 and
// log.cleaner.threads=2 per broker, and topic cf-c no override.
//   node configs_kafkajs.mjs BOOTSTRAP
// Leaves broker 1 with {message.max.bytes: 1500} only.
import assert from 'node:assert/strict'
import { kafkajs, kafkajsClient, runCases, expectError, done } from './lib.mjs'

const bootstrap = process.argv[2]
const { ConfigResourceTypes } = kafkajs
const DYNAMIC_BROKER = 2
const STATIC = 4
const DEFAULT = 5

const admin = kafkajsClient(bootstrap).admin({ retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 300 } })
await admin.connect()

async function entries (type, name, configNames) {
  const res = await admin.describeConfigs({ includeSynonyms: true, resources: [{ type, name, configNames }] })
  assert.equal(res.resources.length, 1)
  assert.equal(res.resources[0].errorCode, 0, `describeConfigs ${name} error`)
  return Object.fromEntries(res.resources[0].configEntries.map(e => [e.configName, e]))
}

const cases = [
  ['describe_broker', async () => {
    const e = await entries(ConfigResourceTypes.BROKER, '1', ['message.max.bytes', 'node.id', 'no.such.config'])
    assert.deepEqual(Object.keys(e).sort(), ['message.max.bytes', 'node.id'], 'only the names asked for')
    const m = e['message.max.bytes']
    assert.deepEqual([m.configValue, m.configSource, m.readOnly, m.isDefault, m.isSensitive], ['5000', DYNAMIC_BROKER, false, false, false], 'message.max.bytes')
    assert.deepEqual(m.configSynonyms.map(s => [s.configName, s.configValue, s.configSource]),
      [['message.max.bytes', '5000', DYNAMIC_BROKER], ['message.max.bytes', '1048588', DEFAULT]], 'message.max.bytes synonyms')
    const n = e['node.id']
    assert.deepEqual([n.configValue, n.configSource, n.readOnly], ['1', STATIC, true], 'node.id')
  }],
  ['alter_broker', async () => {
    await admin.alterConfigs({ validateOnly: true, resources: [{ type: ConfigResourceTypes.BROKER, name: '1', configEntries: [{ name: 'message.max.bytes', value: '10' }] }] })
    assert.equal((await entries(ConfigResourceTypes.BROKER, '1', ['message.max.bytes']))['message.max.bytes'].configValue, '5000', 'after validate-only')
    await admin.alterConfigs({ resources: [{ type: ConfigResourceTypes.BROKER, name: '1', configEntries: [{ name: 'message.max.bytes', value: '1500' }] }] })
    const e = await entries(ConfigResourceTypes.BROKER, '1', ['message.max.bytes', 'log.cleaner.threads'])
    assert.deepEqual([e['message.max.bytes'].configValue, e['message.max.bytes'].configSource], ['1500', DYNAMIC_BROKER], 'message.max.bytes after alterConfigs')
    assert.deepEqual([e['log.cleaner.threads'].configValue, e['log.cleaner.threads'].configSource], ['1', DEFAULT], 'log.cleaner.threads replaced away')
    await expectError(admin.alterConfigs({ resources: [{ type: ConfigResourceTypes.BROKER, name: '1', configEntries: [{ name: 'num.partitions', value: '3' }] }] }), 'INVALID_REQUEST', 'alterConfigs of a read-only broker config')
    const t = await entries(ConfigResourceTypes.TOPIC, 'cf-c', ['max.message.bytes'])
    assert.deepEqual([t['max.message.bytes'].configValue, t['max.message.bytes'].configSource], ['1500', DYNAMIC_BROKER], 'topic cf-c follows the broker')
  }]
]

let failed = 1
try {
  failed = await runCases(cases)
} finally {
  await admin.disconnect().catch(() => {})
  done(failed ? 1 : 0)
}
