import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { NoChainRpcError, InvalidAddressError, InvalidArgumentError, UnavailableError } from '@earn/core'
import { getAddress, parseUnits } from 'viem'
import { closedPortUrl, deployHostile, deployOffsetVault, deploySmartWallet, deployWideDecimals } from '../../../test/chains/evm.ts'
import { connect, vouch } from './client.ts'
import { startEarnChain, type EarnChain } from './fixtures.ts'
import { build } from './transactions.ts'
import { vault } from './vault.ts'

describe('balance.vault (anvil)', () => {
  let chain: EarnChain
  beforeAll(async () => {
    chain = await startEarnChain()
  })
  afterAll(() => chain?.anvil.stop())

  test("an ERC-4626 vault's asset, the asset's decimals and total assets; the vault is its receipt token", async () => {
    const p = { chainId: chain.anvil.chainId, vaultAddress: chain.vault }
    expect(await vault(chain.client(), p)).toEqual({
      baseToken: chain.asset.toLowerCase(),
      receiptToken: chain.vault.toLowerCase(),
      decimals: 6,
      receiptDecimals: 6,
      totalAssets: 0n,
    })
    const owner = await chain.user(parseUnits('12.5', 6))
    await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('12.5', 6) })))
    expect((await vault(chain.client(), p)).totalAssets).toBe(parseUnits('12.5', 6))
  })

  test('the vault and its asset, once read for the catalog, are vouched for: the batcher reads them with the others', async () => {
    const client = chain.client()
    const key = (a: string) => `${chain.anvil.chainId}|${a.toLowerCase()}`
    expect(client.state.vouched.has(key(chain.vault))).toBe(false)
    await vault(client, { chainId: chain.anvil.chainId, vaultAddress: chain.vault })
    expect([client.state.vouched.has(key(chain.vault)), client.state.vouched.has(key(chain.asset))]).toEqual([true, true])
    // A vault that is refused vouches for nothing.
    await expect(vault(client, { chainId: chain.anvil.chainId, vaultAddress: chain.asset.replace(/.$/, (c) => (c === '0' ? '1' : '0')) })).rejects.toThrow()
    expect(client.state.vouched.size).toBe(2)
  })

  test("a vault with a decimals offset: its shares' own decimals, beside the asset's", async () => {
    const offset = await deployOffsetVault(chain.anvil, chain.asset)
    expect(await vault(chain.client(), { chainId: chain.anvil.chainId, vaultAddress: offset })).toMatchObject({ decimals: 6, receiptDecimals: 18 })
  })

  test('a decimals() past what a uint8 holds is no decimals: the shares take the file\'s or the asset\'s, an asset is refused, a token reads null', async () => {
    const wide = await deployWideDecimals(chain.anvil, chain.asset)
    const facts = await vault(chain.client(), { chainId: chain.anvil.chainId, vaultAddress: wide, tokens: [wide, chain.asset] })
    expect(facts).toEqual({ baseToken: chain.asset.toLowerCase(), receiptToken: wide.toLowerCase(), decimals: 6, totalAssets: 0n, tokenDecimals: { [wide]: null, [chain.asset]: 6 } })
    const overWide = await deployWideDecimals(chain.anvil, wide)
    // Read alone, or among the file's tokens (whose answer then stands for the asset's).
    for (const tokens of [undefined, [wide]]) {
      const e = await vault(chain.client(), { chainId: chain.anvil.chainId, vaultAddress: overWide, ...(tokens ? { tokens } : {}) }).catch((x: unknown) => x)
      expect(e).toBeInstanceOf(InvalidArgumentError)
      expect((e as InvalidArgumentError).context).toEqual({ vaultAddress: `its asset ${getAddress(wide)} has no decimals() a uint8 holds` })
    }
  })

  test('a token, a contract of another kind or an empty address is a 400 naming vaultAddress', async () => {
    const wallet = await deploySmartWallet(chain.anvil, chain.anvil.deployer.address)
    for (const address of [chain.asset, wallet, (await chain.user()).address]) {
      const e = await vault(chain.client(), { chainId: chain.anvil.chainId, vaultAddress: address }).catch((e: unknown) => e)
      expect(e).toBeInstanceOf(InvalidArgumentError)
      expect(e).toMatchObject({ status: 400, context: { vaultAddress: expect.stringContaining('ERC-4626') } })
      expect((e as Error).message).toBe(`${getAddress(address)} is not an ERC-4626 vault on chain ${chain.anvil.chainId}`)
    }
    await expect(vault(chain.client(), { chainId: chain.anvil.chainId, vaultAddress: '0x12' })).rejects.toBeInstanceOf(InvalidAddressError)
  })

  test('a vault that fails its whole batch (a return bomb, a gas burner) fails its own reads only, not the vaults read beside it', async () => {
    const [bomb, burner] = [await deployHostile(chain.anvil, 'TestReturnBomb'), await deployHostile(chain.anvil, 'TestGasBurner')]
    // Unvouched (a first import), and vouched (vaults a catalog listed once read well, then changed): the latter share
    // the honest vault's batch, the harder case.
    for (const vouched of [false, true]) {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${chain.anvil.url}` })
      if (vouched) vouch(client, chain.anvil.chainId, [chain.vault, chain.asset, bomb, burner])
      const [good, ...hostile] = await Promise.allSettled([chain.vault, bomb, burner].map((vaultAddress) => vault(client, { chainId: chain.anvil.chainId, vaultAddress })))
      expect(good?.status === 'fulfilled' && good.value.baseToken).toBe(chain.asset.toLowerCase())
      expect(hostile.length).toBe(2)
      for (const h of hostile) expect(h.status === 'rejected' && h.reason).toBeInstanceOf(InvalidArgumentError)
      // Refused, they are read apart from then on (vouched for, they shared every build's batch and failed it whole,
      // each pass), and not vouched for again when read again; the honest vault stays vouched for.
      const key = (a: string) => `${chain.anvil.chainId}|${a.toLowerCase()}`
      const state = () => [chain.vault, bomb, burner].map((a) => [client.state.vouched.has(key(a)), client.state.refused.has(key(a))])
      expect(state()).toEqual([[true, false], [false, true], [false, true]])
      const again = vault(client, { chainId: chain.anvil.chainId, vaultAddress: burner })
      expect(client.state.vouched.has(key(burner))).toBe(false)
      await expect(again).rejects.toBeInstanceOf(InvalidArgumentError)
      expect(state()).toEqual([[true, false], [false, true], [false, true]])
    }
  })

  test("a token of the entry that answers no decimals (a gas burner listed as a deposit token) is read apart, not vouched for, until it reads right", async () => {
    const burner = await deployHostile(chain.anvil, 'TestGasBurner')
    const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${chain.anvil.url}` })
    const key = (a: string) => `${chain.anvil.chainId}|${a.toLowerCase()}`
    const facts = await vault(client, { chainId: chain.anvil.chainId, vaultAddress: chain.vault, tokens: [chain.asset, burner] })
    expect(facts.tokenDecimals).toEqual({ [chain.asset]: 6, [burner]: null })
    await Bun.sleep(0)
    expect([client.state.vouched.has(key(burner)), client.state.refused.has(key(burner))]).toEqual([false, true])
    expect([client.state.vouched.has(key(chain.asset)), client.state.refused.has(key(chain.asset))]).toEqual([true, false])
    // Read again, it is not vouched for before its read.
    const again = vault(client, { chainId: chain.anvil.chainId, vaultAddress: chain.vault, tokens: [chain.asset, burner] })
    expect(client.state.vouched.has(key(burner))).toBe(false)
    await again
  })

  test('an RPC that serves another chain is a 503 naming both chains, whatever the address holds there; nothing it read is vouched for', async () => {
    const elsewhere = connect({ EVM_RPC_URLS: `8453=${chain.anvil.url}` })
    // The vault is one on the chain the RPC serves; the asset is no vault anywhere.
    for (const vaultAddress of [chain.vault, chain.asset]) {
      const e = await vault(elsewhere, { chainId: '8453', vaultAddress }).catch((x: unknown) => x)
      expect(e).toBeInstanceOf(UnavailableError)
      expect((e as UnavailableError).message).toBe(`the RPC configured for EVM chain 8453 serves chain ${chain.anvil.chainId}`)
      // Only the address the catalog named: not the asset the other chain's vault answered.
      if (vaultAddress === chain.vault) expect([...elsewhere.state.vouched]).toEqual([`8453|${chain.vault.toLowerCase()}`])
    }
  })

  test('a chain with no RPC here is a 400 NoChainRpcError, the class core reads as the deployment\'s gap', async () => {
    const e = await vault(connect({}), { chainId: chain.anvil.chainId, vaultAddress: chain.vault }).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(NoChainRpcError)
    expect(e).toMatchObject({ status: 400, context: { chainId: `no RPC configured for chain ${chain.anvil.chainId}` } })
  })

  test('a chain that is down is a 503', async () => {
    const down = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${await closedPortUrl()}` })
    await expect(vault(down, { chainId: chain.anvil.chainId, vaultAddress: chain.vault })).rejects.toBeInstanceOf(UnavailableError)
  })
})
