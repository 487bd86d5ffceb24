import { describe, expect, test } from 'bun:test'
import { connect } from './client.ts'

describe('connect', () => {
  test('without SOLANA_RPC_URL there is no rpc, and that is not an error', () => {
    expect(connect({}).rpc).toBeUndefined()
    expect(connect({ SOLANA_RPC_URL: '  ' }).rpc).toBeUndefined()
  })

  test('makes an rpc for an http(s) URL without contacting it', () => {
    // Port 9 (discard) on a reserved TEST-NET address: any I/O here would fail or hang.
    const client = connect({ SOLANA_RPC_URL: 'https://192.0.2.1:9/?api-key=secret' })
    expect(typeof client.rpc?.getBalance).toBe('function')
    expect(client.rpc).toBe(client.rpc) // built once
  })

  test('rejects an invalid URL, naming the setting and not echoing its value', () => {
    expect(() => connect({ SOLANA_RPC_URL: 'not a url?api-key=secret' })).toThrow(/SOLANA_RPC_URL/)
    try {
      connect({ SOLANA_RPC_URL: 'not a url?api-key=secret' })
    } catch (e) {
      expect((e as Error).message).not.toContain('secret')
    }
    expect(() => connect({ SOLANA_RPC_URL: 'wss://api.mainnet-beta.solana.com' })).toThrow('SOLANA_RPC_URL must be an http(s) URL')
    expect(() => connect({ SOLANA_RPC_URL: 'https://a.example,https://b.example' })).toThrow('SOLANA_RPC_URL names no single host')
  })
})
