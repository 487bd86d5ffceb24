import { beforeAll, describe, expect, test } from 'bun:test'
import { type ApiError, InvalidAddressError, InvalidArgumentError } from '@earn/core'
import { Address, beginCell, Dictionary, toNano } from '@ton/core'
import { keyPairFromSeed, sha256_sync } from '@ton/crypto'
import { jettonContent, startTon, type TonSandbox, type TonWallet } from '../../../test/chains/ton.ts'
import { DEFAULT_JETTON_DECIMALS, forksWithin, notJetton, onChainDecimals, ownJettonWallet } from './jettonMaster.ts'
import { readTonVault } from './vault.ts'

let chain: TonSandbox
let vault: TonWallet
let offChain: Address
let sixDecimals: Address
let receipt: Address

beforeAll(async () => {
  chain = await startTon()
  vault = await chain.deployWallet('v4r2', keyPairFromSeed(Buffer.alloc(32, 61)), toNano('2'))
  offChain = await chain.deployJetton()
  sixDecimals = await chain.deployJetton({ uri: 'https://example.invalid/usd.json', decimals: 6 })
  receipt = await chain.deployJetton()
  await chain.mintJetton(offChain, vault.address, 777n)
  await chain.mintJetton(sixDecimals, vault.address, 42_000_000n)
})

const read = (baseToken?: string, receiptToken: string | undefined = receipt.toString()) =>
  readTonVault(chain.client, { chainId: '-239', vaultAddress: vault.address.toString(), baseToken, receiptToken })

describe('TON vault state', () => {
  test('jetton base: total assets are the vault\'s jetton balance; off-chain metadata states no decimals, 9 assumed', async () => {
    expect(await read(offChain.toString())).toEqual({
      baseToken: offChain.toRawString(),
      receiptToken: receipt.toRawString(),
      decimals: DEFAULT_JETTON_DECIMALS,
      decimalsAssumed: true,
      totalAssets: 777n,
    })
  })

  test('decimals stated in on-chain metadata are read', async () => {
    expect(await read(sixDecimals.toRawString())).toMatchObject({ decimals: 6, totalAssets: 42_000_000n })
  })

  test("the receipt jetton's decimals are read where its metadata states them, with a jetton base or TON", async () => {
    const sixReceipt = await chain.deployJetton({ uri: 'https://example.invalid/r6.json', decimals: 6 })
    const nineReceipt = await chain.deployJetton({ uri: 'https://example.invalid/r9.json', decimals: 9 })
    expect(await read(sixDecimals.toRawString(), sixReceipt.toString())).toMatchObject({ decimals: 6, receiptDecimals: 6 })
    expect(await read('native', nineReceipt.toString())).toMatchObject({ decimals: 9, receiptDecimals: 9 })
    // Each jetton's own: whether they may differ is core's to say (the ecosystem's receipts are one for one).
    const threeDecimals = await chain.deployJetton({ uri: 'https://example.invalid/r.json', decimals: 3 })
    expect(await read(sixDecimals.toRawString(), threeDecimals.toString())).toMatchObject({ decimals: 6, receiptDecimals: 3 })
    // Off-chain metadata states none: the catalog's (or the base token's) stand, as before.
    expect('receiptDecimals' in (await read(sixDecimals.toRawString()))).toBe(false)
    // A receipt token that is no jetton is refused naming the field, with no hint of TON (refused there too).
    const wallet = (await read(sixDecimals.toRawString(), vault.address.toString()).catch((e: unknown) => e)) as ApiError
    expect(wallet.context).toEqual({ receiptToken: 'must be a deployed jetton master address' })
  })

  test('a vault without a jetton wallet for the base token holds none', async () => {
    expect((await read(receipt.toRawString())).totalAssets).toBe(0n)
  })

  test('TON base: the vault\'s balance in nanotons, 9 decimals', async () => {
    const state = await read('native')
    expect(state).toMatchObject({ baseToken: 'native', decimals: 9 })
    expect(state.totalAssets).toBe((await chain.blockchain.getContract(vault.address)).balance)
  })

  test('a receipt token of TON is refused: withdrawals send the receipt jetton back, and none could be built', async () => {
    for (const base of [offChain.toString(), 'native']) {
      const error = (await read(base, 'native').catch((e: unknown) => e)) as ApiError
      expect(error).toBeInstanceOf(InvalidArgumentError)
      expect(error.context).toEqual({ receiptToken: 'must be a jetton master address, not native' })
    }
  })

  test('the catalog must name both tokens', async () => {
    for (const [base, rec, field] of [
      [undefined, receipt.toString(), 'baseToken'],
      [offChain.toString(), undefined, 'receiptToken'],
      ['', receipt.toString(), 'baseToken'],
    ] as const) {
      const params = { chainId: '-239', vaultAddress: vault.address.toString(), baseToken: base, receiptToken: rec }
      const error = (await readTonVault(chain.client, params).catch((e: unknown) => e)) as ApiError
      expect(error).toBeInstanceOf(InvalidArgumentError)
      expect(error.context).toHaveProperty(field)
    }
  })

  test('a vault address deposits could never leave (a jetton master or wallet given for its owner), or a TON vault not deployed, is a 400 naming vaultAddress', async () => {
    const at = (vaultAddress: Address, baseToken: string) => readTonVault(chain.client, { chainId: '-239', vaultAddress: vaultAddress.toString(), baseToken, receiptToken: receipt.toString() }).catch((e: unknown) => e)
    const { address: jettonWallet } = await ownJettonWallet(chain.client, offChain, vault.address, notJetton('baseToken', offChain.toString()))
    for (const [address, problem] of [
      [offChain, 'is a jetton master, not a wallet (its owner)'],
      [jettonWallet, 'is a jetton wallet, not a wallet (its owner)'],
    ] as const)
      for (const base of [offChain.toString(), 'native']) expect(((await at(address, base)) as ApiError).context, `${problem} ${base}`).toEqual({ vaultAddress: problem })
    // Nothing deployed there: TON would bounce; a jetton lands in the jetton wallet the master names for it.
    const nobody = new Address(0, Buffer.alloc(32, 77))
    expect(((await at(nobody, 'native')) as ApiError).context).toEqual({ vaultAddress: 'is not deployed' })
    expect(await at(nobody, offChain.toString())).toMatchObject({ totalAssets: 0n })
  })

  test('a base token that is not a jetton master, or not an address, is a 400 naming baseToken', async () => {
    const notJetton = (await read(vault.address.toRawString()).catch((e: unknown) => e)) as ApiError
    expect(notJetton).toBeInstanceOf(InvalidArgumentError)
    expect(notJetton.context).toHaveProperty('baseToken')
    expect(await read('EQ-nope').catch((e: unknown) => e)).toBeInstanceOf(InvalidAddressError)
  })
})

describe('onChainDecimals', () => {
  test('reads TEP-64 on-chain content, and gives null for off-chain or odd content', () => {
    expect(onChainDecimals(jettonContent({ uri: 'u', decimals: 18 }))).toBe(18)
    expect(onChainDecimals(jettonContent({ uri: 'u' }))).toBeNull()
    expect(onChainDecimals(beginCell().endCell())).toBeNull()
    expect(onChainDecimals(beginCell().storeUint(0, 8).storeBit(0).endCell())).toBeNull() // on-chain, empty dict
  })

  test('content whose dictionary forks share their branches is not walked: null at once, not 2^depth entries', () => {
    // 40 forks deep, each with both branches one cell: 2^40 entries as a tree, 42 cells as sent.
    const depth = 40
    const rest = 256 - depth
    let node = beginCell().storeBit(1).storeBit(1).storeBit(0).storeUint(rest, Math.ceil(Math.log2(rest + 1))).storeRef(beginCell().storeUint(0, 8).storeStringTail('9').endCell()).endCell()
    for (let i = 0; i < depth; i++) node = beginCell().storeBit(0).storeBit(0).storeRef(node).storeRef(node).endCell()
    const content = beginCell().storeUint(0, 8).storeBit(1).storeRef(node).endCell()
    expect(forksWithin(node, 4_096)).toBe(false)
    expect(onChainDecimals(content)).toBeNull()
    // Real content stays small, however long its values: 600 KB of image_data in snake cells is one leaf's value.
    const dict = Dictionary.empty(Dictionary.Keys.BigUint(256), Dictionary.Values.Cell())
    const put = (key: string, value: string) => dict.set(BigInt(`0x${sha256_sync(key).toString('hex')}`), beginCell().storeUint(0, 8).storeStringTail(value).endCell())
    put('decimals', '6')
    put('image_data', 'x'.repeat(600_000))
    expect(onChainDecimals(beginCell().storeUint(0, 8).storeDict(dict).endCell())).toBe(6)
  })
})
