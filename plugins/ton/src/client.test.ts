import { describe, expect, test } from 'bun:test'
import { ApiError, ChainNotConfiguredError, UnavailableError } from '@earn/core'
import { Address } from '@ton/core'
import { askChain, connectTon, createTonClient, getMethodExitCode } from './client.ts'

const somewhere = new Address(0, Buffer.alloc(32, 1))

describe('connectTon', () => {
  test('does no I/O and needs no URL until a provider is asked for', () => {
    const client = connectTon({})
    expect(typeof client.provider).toBe('function')
    let thrown: unknown
    try {
      client.provider(somewhere)
    } catch (e) {
      thrown = e
    }
    // The class is what core reads (an import's note, a portfolio's 503), not the message.
    expect(thrown).toBeInstanceOf(ChainNotConfiguredError)
    expect((thrown as ChainNotConfiguredError).status).toBe(503)
    expect((thrown as ChainNotConfiguredError).message).toContain('TON_API_URL')
    expect((thrown as ChainNotConfiguredError).context).toHaveProperty('TON_API_URL')
  })

  test('a blank URL counts as none', () => {
    expect(() => connectTon({ TON_API_URL: '  ' }).provider(somewhere)).toThrow(ChainNotConfiguredError)
  })

  test('a value that is not an http(s) URL throws at once, naming the variable and not the value', () => {
    const refused: [Record<string, string>, string][] = [
      [{ TON_API_URL: 'not a url SECRETKEY' }, 'TON_API_URL is not a valid URL'],
      [{ TON_API_URL: 'ftp://x/SECRETKEY/api/v2/jsonRPC' }, 'TON_API_URL must be an http(s) URL, not ftp:'],
      [{ TON_API_URL: 'https://toncenter.com/api/v2/jsonRPC', TON_INDEX_URL: 'also not a url' }, 'TON_INDEX_URL is not a valid URL'],
      [{ TON_API_URL: 'https://a.example,https://b.example/SECRETKEY' }, 'TON_API_URL names no single host'],
    ]
    for (const [env, message] of refused) {
      expect(() => connectTon(env)).toThrow(message)
      expect(() => connectTon(env)).not.toThrow('SECRETKEY')
    }
  })

  test('with a URL it hands out TonClient providers', () => {
    const provider = connectTon({ TON_API_URL: 'http://127.0.0.1:1/jsonRPC', TON_API_KEY: 'k' }).provider(somewhere)
    expect(typeof provider.get).toBe('function')
    expect(typeof provider.getState).toBe('function')
  })
})

describe('askChain', () => {
  test('a get-method exit code is an answer and passes through', async () => {
    const answered = new Error('Unable to execute get method. Got exit_code: 11')
    expect(getMethodExitCode(answered)).toBe(11)
    expect(getMethodExitCode(Object.assign(new Error('x'), { exitCode: -13 }))).toBe(-13)
    expect(await askChain('x', () => Promise.reject(answered)).catch((e: unknown) => e)).toBe(answered)
  })

  test('anything else becomes UnavailableError with the cause kept', async () => {
    const network = new Error('socket hang up')
    const error = await askChain('the wallet state', () => Promise.reject(network)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UnavailableError)
    expect((error as UnavailableError).message).toBe('the TON API did not answer while reading the wallet state; retry later')
    expect((error as UnavailableError).cause).toBe(network)
    // The context names the setting the operator checks, as a missing one's does.
    expect((error as UnavailableError).context).toEqual({ TON_API_URL: 'did not answer' })
  })
})

describe('createTonClient', () => {
  test('a client made without a lookup says so as a server fault, not as a missing transaction', async () => {
    const client = createTonClient(() => {
      throw new Error('not used')
    })
    const error = await client.findTransaction('ab'.repeat(32)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ApiError)
    expect((error as ApiError).code).toBe('INTERNAL')
  })

  test('the clock is the one given, else the system\'s', () => {
    expect(createTonClient(() => ({}) as never, { now: () => 42 }).now()).toBe(42)
    expect(Math.abs(createTonClient(() => ({}) as never).now() - Date.now())).toBeLessThan(1000)
  })
})
