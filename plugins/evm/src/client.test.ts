import { describe, expect, test } from 'bun:test'
import { createPublicClient, http } from 'viem'
import { connect, evmClientFromPublicClients, parseRpcUrls } from './client.ts'

describe('connect', () => {
  test('no EVM_RPC_URLS, or an empty one, means no chains', () => {
    for (const env of [{}, { EVM_RPC_URLS: '' }, { EVM_RPC_URLS: '  ' }]) {
      const client = connect(env)
      expect(client.chainIds).toEqual([])
      expect(client.publicClient('1')).toBeUndefined()
    }
  })

  test('makes one public client per configured chain, lazily, with batching on', () => {
    const client = connect({ EVM_RPC_URLS: '1=https://eth.example/v2/KEY, 8453=http://127.0.0.1:1,' })
    expect(client.chainIds).toEqual(['1', '8453'])
    const mainnet = client.publicClient('1')
    expect(mainnet).toBeDefined()
    expect(client.publicClient('1')).toBe(mainnet!)
    expect(mainnet!.chain?.id).toBe(1)
    // viem knows mainnet's Multicall3, so concurrent eth_calls fold into one.
    expect(mainnet!.chain?.contracts?.multicall3?.address).toBe('0xca11bde05977b3631167028862be2a173976ca11')
    expect(mainnet!.batch?.multicall).toBe(true)
    expect(mainnet!.transport.url).toBe('https://eth.example/v2/KEY')
    expect(client.publicClient('8453')!.chain?.id).toBe(8453)
    expect(client.publicClient('10')).toBeUndefined()
  })

  test('a chain viem does not know gets a bare definition with its id', () => {
    const c = connect({ EVM_RPC_URLS: '987654321=http://127.0.0.1:1' }).publicClient('987654321')
    expect(c?.chain?.id).toBe(987654321)
    expect(c?.chain?.contracts?.multicall3).toBeUndefined()
  })

  test.each([
    ['1', 'entry 1 is not chainId=url'],
    ['mainnet=https://eth.example', 'chain id must be a positive decimal integer'],
    ['0=https://eth.example', 'chain id must be a positive decimal integer'],
    ['1=https://a.example,1=https://b.example', 'chain 1 is listed twice'],
    ['1=not a url', 'is not a valid URL'],
    ['1=wss://eth.example', 'must be http or https'],
  ])('refuses EVM_RPC_URLS=%p, naming the variable', (value, text) => {
    expect(() => connect({ EVM_RPC_URLS: value })).toThrow(/EVM_RPC_URLS/)
    expect(() => connect({ EVM_RPC_URLS: value })).toThrow(text)
  })

  test('an error never repeats the URL, which may carry an API key', () => {
    expect(() => parseRpcUrls('1=https://user:secret@eth.example,x=https://secret.example')).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('secret') }),
    )
  })
})

describe('evmClientFromPublicClients', () => {
  test('serves exactly the clients it was given', () => {
    const anvil = createPublicClient({ transport: http('http://127.0.0.1:1') })
    const client = evmClientFromPublicClients({ '31337': anvil })
    expect(client.chainIds).toEqual(['31337'])
    expect(client.publicClient('31337')).toBe(anvil)
    expect(client.publicClient('1')).toBeUndefined()
  })
})
