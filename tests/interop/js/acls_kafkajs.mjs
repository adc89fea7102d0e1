// ACLs with kafkajs 2.2.4 over SASL PLAIN: createAcls, describeAcls with
// exact results (literal, prefixed, MATCH filters), deleteAcls with the
// matched ACLs, and a user without ALTER on the cluster refused with
// CLUSTER_AUTHORIZATION_FAILED.
//   node acls_kafkajs.mjs BOOTSTRAP
import assert from 'node:assert/strict'
import { kafkajs, kafkajsClient, runCases, expectError, done } from './lib.mjs'

const bootstrap = process.argv[2]
const { AclResourceTypes: RT, AclOperationTypes: OP, AclPermissionTypes: PERM, ResourcePatternTypes: PT } = kafkajs
assert.equal(RT.TOPIC, 2)
assert.equal(OP.WRITE, 4)
assert.equal(PT.PREFIXED, 4)

function client (user, password) {
  return kafkajsClient(bootstrap, { sasl: { mechanism: 'plain', username: user, password } })
}

const admin = client('admin', 'admin-secret').admin()
await admin.connect()
const alice = client('alice', 'alice-secret').admin()
await alice.connect()

const ACLS = [
  { resourceType: RT.TOPIC, resourceName: 'kj-orders', resourcePatternType: PT.LITERAL, principal: 'User:kj1', host: '*', operation: OP.WRITE, permissionType: PERM.ALLOW },
  { resourceType: RT.TOPIC, resourceName: 'kj-', resourcePatternType: PT.PREFIXED, principal: 'User:kj1', host: '*', operation: OP.READ, permissionType: PERM.ALLOW },
  { resourceType: RT.GROUP, resourceName: 'kj-group', resourcePatternType: PT.LITERAL, principal: 'User:kj2', host: '10.1.2.3', operation: OP.READ, permissionType: PERM.DENY }
]

function flat (res) {
  const out = []
  for (const r of res.resources) {
    for (const a of r.acls) {
      out.push([r.resourceType, r.resourceName, r.resourcePatternType, a.principal, a.host, a.operation, a.permissionType].join('|'))
    }
  }
  return out.sort()
}

const key = a => [a.resourceType, a.resourceName, a.resourcePatternType, a.principal, a.host, a.operation, a.permissionType].join('|')
const ANYF = { resourceType: RT.ANY, resourcePatternType: PT.ANY, operation: OP.ANY, permissionType: PERM.ANY }

const cases = [
  ['create_describe', async () => {
    const res = await admin.createAcls({ acl: ACLS })
    assert.equal(res, true, 'createAcls result')
    const all = await admin.describeAcls({ ...ANYF })
    const mine = flat(all).filter(s => s.includes('User:kj'))
    assert.deepEqual(mine, ACLS.map(key).sort(), 'describeAcls ANY')
    // MATCH: every ACL that applies to topic kj-orders (the literal and the prefix)
    const m = await admin.describeAcls({ resourceType: RT.TOPIC, resourceName: 'kj-orders', resourcePatternType: PT.MATCH, operation: OP.ANY, permissionType: PERM.ANY })
    assert.deepEqual(flat(m).filter(s => s.includes('User:kj')), [key(ACLS[0]), key(ACLS[1])].sort(), 'describeAcls MATCH kj-orders')
    // principal filter
    const p = await admin.describeAcls({ ...ANYF, principal: 'User:kj2' })
    assert.deepEqual(flat(p), [key(ACLS[2])], 'describeAcls principal User:kj2')
  }],
  ['not_authorized', async () => {
    await expectError(alice.createAcls({ acl: [ACLS[0]] }), 'CLUSTER_AUTHORIZATION_FAILED', 'alice createAcls')
    await expectError(alice.describeAcls({ ...ANYF }), 'CLUSTER_AUTHORIZATION_FAILED', 'alice describeAcls')
  }],
  ['delete', async () => {
    const res = await admin.deleteAcls({ filters: [{ resourceType: RT.TOPIC, resourceName: 'kj-', resourcePatternType: PT.PREFIXED, principal: 'User:kj1', host: '*', operation: OP.ANY, permissionType: PERM.ANY }] })
    assert.equal(res.filterResponses.length, 1)
    assert.equal(res.filterResponses[0].errorCode, 0)
    assert.deepEqual(res.filterResponses[0].matchingAcls.map(a => key(a)), [key(ACLS[1])], 'deleteAcls matched')
    const all = await admin.describeAcls({ ...ANYF })
    assert.deepEqual(flat(all).filter(s => s.includes('User:kj')), [key(ACLS[0]), key(ACLS[2])].sort(), 'after deleteAcls')
    const rest = await admin.deleteAcls({ filters: [{ ...ANYF, principal: 'User:kj1' }, { ...ANYF, principal: 'User:kj2' }] })
    assert.deepEqual(rest.filterResponses.map(f => f.matchingAcls.map(a => key(a))), [[key(ACLS[0])], [key(ACLS[2])]], 'deleteAcls two filters')
    const none = await admin.describeAcls({ ...ANYF })
    assert.deepEqual(flat(none).filter(s => s.includes('User:kj')), [], 'all deleted')
  }]
]

const failed = await runCases(cases)
await admin.disconnect()
await alice.disconnect()
done(failed ? 1 : 0)
