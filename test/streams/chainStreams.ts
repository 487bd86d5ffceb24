/**
 * The Solana and TON stream tests' start: the chain with its sample opportunity, a treasury configured for it, a
 * harness on that chain, and the sample catalog entry imported (the streams' target). Callers close the harness.
 */
import { importCatalog } from '@earn/core'
import { solana } from '@earn/plugin-solana'
import { generateKeyPairSigner } from '@solana/kit'
import { toNano } from '@ton/core'
import { keyPairFromSeed } from '@ton/crypto'
import { randomBytes } from 'node:crypto'
import { localCatalog } from '../actions/localChain.ts'
import { deploySampleSolana, startSolana } from '../chains/solana.ts'
import { deploySampleTon, startTon } from '../chains/ton.ts'
import { createHarness, type Harness } from '../harness.ts'

/** TON's chain id as streams name it: the sandbox serves mainnet's. */
export const TON_CHAIN = '-239'

const imported = async (h: Harness, ecosystem: 'solana' | 'ton') => {
  const entry = localCatalog(ecosystem).opportunities[0]!
  await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: [entry] })
  return entry
}

export async function startSolanaStreams() {
  const chain = await startSolana()
  const sample = await deploySampleSolana(chain)
  const treasury = (await generateKeyPairSigner()).address
  const h = await createHarness({ clients: { solana: solana.connect({ SOLANA_RPC_URL: chain.url }) }, env: { STREAM_TREASURIES: `localnet=${treasury}` } })
  return { chain, sample, treasury, h, entry: await imported(h, 'solana') }
}

export async function startTonStreams() {
  const chain = await startTon()
  const sample = await deploySampleTon(chain)
  const treasury = await chain.deployWallet('v4r2', keyPairFromSeed(randomBytes(32)), toNano('1'))
  const h = await createHarness({ clients: { ton: chain.client }, env: { STREAM_TREASURIES: `${TON_CHAIN}=${treasury.address.toRawString()}` } })
  return { chain, sample, treasury, h, entry: await imported(h, 'ton') }
}
