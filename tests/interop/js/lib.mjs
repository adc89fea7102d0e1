// Small harness shared by the Node side of the interop tests.
//
// The Python harness starts samsa and runs these scripts with the
// bootstrap address; a script either prints one JSON result line
// (clients.mjs) or runs assertion cases and prints one PASS/FAIL/SKIP line
// per case (admin_*.mjs), exiting 1 if any case failed.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
export const kafkajs = require('kafkajs') // CommonJS: no named imports
// @platformatic/kafka takes ~0.7 s to load: only scripts that use it do.
export async function loadPlatformatic () {
  return await import('@platformatic/kafka')
}

export const SCALE = Number(process.env.INTEROP_TIMEOUT_SCALE || (process.env.SAMSA_SANITIZED === '1' ? 4 : 1))
export const bound = ms => Math.round(ms * SCALE)

export function b64 (buf) {
  return buf == null ? null : Buffer.from(buf).toString('base64')
}

export function unb64 (s) {
  return s == null ? null : Buffer.from(s, 'base64')
}

export async function readStdinJson () {
  const chunks = []
  for await (const c of process.stdin) chunks.push(c)
  const text = Buffer.concat(chunks).toString()
  return text.trim() ? JSON.parse(text) : null
}

export function withTimeout (promise, ms, what) {
  let t
  const timer = new Promise((resolve, reject) => {
    t = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)
  })
  return Promise.race([promise, timer]).finally(() => clearTimeout(t))
}

// The Kafka error name carried by an error from either client, digging
// through kafkajs's retry/aggregate wrappers and platformatic's
// MultipleErrors/ResponseError.
export function errorTypes (e) {
  const out = new Set()
  const seen = new Set()
  const visit = x => {
    if (!x || typeof x !== 'object' || seen.has(x)) return
    seen.add(x)
    if (typeof x.type === 'string') out.add(x.type)
    if (typeof x.apiCode === 'string') out.add(x.apiCode)
    if (typeof x.code === 'string' && /^[A-Z_]+$/.test(x.code) && !x.code.startsWith('PLT_')) out.add(x.code)
    if (typeof x.apiId === 'string') out.add(x.apiId)
    for (const k of ['originalError', 'cause', 'error']) visit(x[k])
    for (const k of ['errors']) {
      const v = x[k]
      if (Array.isArray(v)) v.forEach(visit)
      else if (v && typeof v === 'object') Object.values(v).forEach(visit)
    }
  }
  visit(e)
  return [...out]
}

export function describeError (e) {
  if (!e) return String(e)
  const types = errorTypes(e)
  return `${e.name || 'Error'}: ${e.message} [types: ${types.join(',') || 'none'}]`
}

export async function expectError (promise, type, what) {
  let res
  try {
    res = await promise
  } catch (e) {
    const types = errorTypes(e)
    if (!types.includes(type)) {
      throw new assert.AssertionError({ message: `${what}: expected ${type}, got ${describeError(e)}` })
    }
    return e
  }
  throw new assert.AssertionError({ message: `${what}: expected ${type}, but it succeeded: ${JSON.stringify(res, jsonReplacer)}` })
}

export function jsonReplacer (k, v) {
  if (typeof v === 'bigint') return v.toString()
  if (v instanceof Map) return Object.fromEntries(v)
  if (v && v.type === 'Buffer' && Array.isArray(v.data)) return `<${v.data.length} bytes>`
  return v
}

// Test cases: each prints one line; the process exits 1 if any failed.
export async function runCases (cases, { caseLimitMs = 60000 } = {}) {
  let failed = 0
  for (const [name, fn] of cases) {
    const t0 = Date.now()
    let status = 'PASS'
    let why = ''
    try {
      await withTimeout(Promise.resolve().then(fn), bound(caseLimitMs), `case ${name}`)
    } catch (e) {
      if (e && e.skip) {
        status = 'SKIP'
        why = e.message
      } else {
        status = 'FAIL'
        failed++
        why = e && e.message ? e.message.split('\n')[0] : String(e)
        console.log(`    --- ${name} failed:\n      ${(e && e.stack ? e.stack : String(e)).replace(/\n/g, '\n      ')}`)
      }
    }
    const dt = ((Date.now() - t0) / 1000).toFixed(1)
    console.log(`  ${status} ${name} (${dt}s)${why ? ': ' + why.slice(0, 300) : ''}`)
  }
  return failed
}

export function skip (msg) {
  const e = new Error(msg)
  e.skip = true
  return e
}

export function done (code) {
  // Client teardown must never hang a test.
  setTimeout(() => process.exit(code), 50).unref()
  process.exitCode = code
}

export function kafkajsClient (bootstrap, extra = {}) {
  if (extra.sasl && extra.sasl.mechanism === 'oauthbearer' && extra.sasl.token !== undefined) {
    // JSON cannot carry kafkajs's token provider: a fixed token stands in
    const token = extra.sasl.token
    extra = { ...extra, sasl: { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: token }) } }
  }
  return new kafkajs.Kafka({
    clientId: 'samsa-interop-kafkajs',
    brokers: [bootstrap],
    logLevel: kafkajs.logLevel.NOTHING,
    connectionTimeout: bound(5000),
    requestTimeout: bound(15000),
    retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 500 },
    ...extra
  })
}

export function platformaticOptions (bootstrap, extra = {}) {
  return {
    clientId: 'samsa-interop-platformatic',
    bootstrapBrokers: [bootstrap],
    timeout: bound(15000),
    connectTimeout: bound(5000),
    requestTimeout: bound(15000),
    retries: 1,
    retryDelay: 100,
    ...extra
  }
}
