/**
 * TON test harness: an in-process chain (@ton/sandbox) with real wallet contracts and the standard
 * TEP-74 jetton, and a TON Connect wallet stand-in that signs `ton_proof` with a real key pair.
 *
 * The proof hash is computed here independently of the plugin (node:crypto, own byte layout), so a
 * layout mistake on either side shows up as a failing test instead of two copies agreeing.
 */
import { createHash } from 'node:crypto'
import {
  Address,
  beginCell,
  Cell,
  contractAddress,
  storeStateInit,
  toNano,
  type Contract,
  type ContractProvider,
  type Sender,
  type StateInit,
} from '@ton/core'
import { sign, type KeyPair } from '@ton/crypto'
import { WalletContractV3R2, WalletContractV4, WalletContractV5R1 } from '@ton/ton'
import { Blockchain, type SandboxContract, type TreasuryContract } from '@ton/sandbox'
// The standard (discoverable) jetton minter and wallet, compiled, shipped as BoCs under MIT by
// @ton-community/assets-sdk; deep imports keep the rest of that package (S3, Pinata) out.
import { jettonMinterCode } from '@ton-community/assets-sdk/dist/jetton/contracts/build/jetton-minter.js'
import { jettonWalletCode } from '@ton-community/assets-sdk/dist/jetton/contracts/build/jetton-wallet.js'
import { createTonClient, type TonChainClient, type TonProof } from '@earn/plugin-ton'

export type TonWalletVersion = 'v3r2' | 'v4r2' | 'v5r1'

export interface TonWallet {
  version: TonWalletVersion
  address: Address
  init: { code: Cell; data: Cell }
}

/** The wallet a key pair controls, as TON Connect wallets derive it (subwallet 0 / mainnet id). */
export function tonWallet(version: TonWalletVersion, publicKey: Buffer): TonWallet {
  const contract =
    version === 'v3r2'
      ? WalletContractV3R2.create({ workchain: 0, publicKey })
      : version === 'v4r2'
        ? WalletContractV4.create({ workchain: 0, publicKey })
        : WalletContractV5R1.create({ publicKey })
  return { version, address: contract.address, init: contract.init }
}

/** `account.walletStateInit` as a wallet reports it: base64 BoC of the StateInit cell. */
export function stateInitBase64(init: StateInit): string {
  return beginCell().store(storeStateInit(init)).endCell().toBoc().toString('base64')
}

export interface SignTonProofParameters {
  keyPair: KeyPair
  address: Address | string
  domain: string
  /** Unix seconds; defaults to now. */
  timestamp?: number
  payload: string
  /** Sent as `stateInit`; omit to make the server read the key from the deployed wallet. */
  stateInit?: StateInit | string
  /** Adds `publicKey` (hex), as the membership contract asks when no stateInit is sent. */
  publicKey?: Buffer
}

const sha256 = (...parts: Buffer[]) => {
  const h = createHash('sha256')
  for (const part of parts) h.update(part)
  return h.digest()
}

/** What a TON Connect wallet returns for `ton_proof`, encoded as the membership `signature` field. */
export function signTonProof(p: SignTonProofParameters): string {
  const address = typeof p.address === 'string' ? Address.parse(p.address) : p.address
  const timestamp = p.timestamp ?? Math.floor(Date.now() / 1000)
  const domain = Buffer.from(p.domain, 'utf8')
  const head = Buffer.alloc(4 + 32 + 4)
  head.writeInt32BE(address.workChain, 0)
  address.hash.copy(head, 4)
  head.writeUInt32LE(domain.length, 36)
  const ts = Buffer.alloc(8)
  ts.writeBigUInt64LE(BigInt(timestamp))
  const inner = sha256(Buffer.from('ton-proof-item-v2/'), head, domain, ts, Buffer.from(p.payload, 'utf8'))
  const digest = sha256(Buffer.from([0xff, 0xff]), Buffer.from('ton-connect'), inner)
  const proof: TonProof = {
    timestamp,
    domain: { lengthBytes: domain.length, value: p.domain },
    signature: sign(digest, p.keyPair.secretKey).toString('base64'),
    payload: p.payload,
    ...(p.stateInit === undefined
      ? {}
      : { stateInit: typeof p.stateInit === 'string' ? p.stateInit : stateInitBase64(p.stateInit) }),
    ...(p.publicKey === undefined ? {} : { publicKey: p.publicKey.toString('hex') }),
  }
  return Buffer.from(JSON.stringify(proof)).toString('base64')
}

const MINTER_CODE = Cell.fromBase64(jettonMinterCode.codeBoc)
const JETTON_WALLET_CODE = Cell.fromBase64(jettonWalletCode.codeBoc)
const OP_MINT = 21
const OP_INTERNAL_TRANSFER = 0x178d4519

/** Just enough of the standard minter to deploy it and mint (TEP-74 plus the reference mint op). */
class JettonMinter implements Contract {
  constructor(
    readonly address: Address,
    readonly init: StateInit,
  ) {}

  /** The content URI is part of the address, so distinct URIs give distinct jettons. */
  static create(admin: Address, contentUri: string): JettonMinter {
    // Off-chain content layout (TEP-64): 0x01 then the URI.
    const content = beginCell().storeUint(1, 8).storeStringTail(contentUri).endCell()
    const data = beginCell().storeCoins(0).storeAddress(admin).storeRef(content).storeRef(JETTON_WALLET_CODE).endCell()
    const init = { code: MINTER_CODE, data }
    return new JettonMinter(contractAddress(0, init), init)
  }

  async sendDeploy(provider: ContractProvider, via: Sender) {
    await provider.internal(via, { value: toNano('0.05'), bounce: false })
  }

  async sendMint(provider: ContractProvider, via: Sender, to: Address, amount: bigint) {
    const transfer = beginCell()
      .storeUint(OP_INTERNAL_TRANSFER, 32)
      .storeUint(0, 64)
      .storeCoins(amount)
      .storeAddress(this.address)
      .storeAddress(via.address ?? null)
      .storeCoins(0)
      .storeMaybeRef(null)
      .endCell()
    const body = beginCell()
      .storeUint(OP_MINT, 32)
      .storeUint(0, 64)
      .storeAddress(to)
      .storeCoins(toNano('0.05'))
      .storeRef(transfer)
      .endCell()
    await provider.internal(via, { value: toNano('0.1'), body })
  }
}

export interface TonSandbox {
  blockchain: Blockchain
  /** The plugin's client over the sandbox: the same ContractProvider interface TonClient gives. */
  client: TonChainClient
  /** A funded wallet that pays for deployments and mints. */
  treasury: SandboxContract<TreasuryContract>
  /** Funds and deploys the wallet a key pair controls; `balance` is what it holds afterwards, less fees. */
  deployWallet(version: TonWalletVersion, keyPair: KeyPair, balance?: bigint): Promise<TonWallet>
  /** Deploys a new standard jetton minter (admin: the treasury) on each call; returns its master address. */
  deployJetton(): Promise<Address>
  /** Mints `amount` base units of `master` to `owner`; rejects if any transaction of the mint aborts. */
  mintJetton(master: Address, owner: Address, amount: bigint): Promise<void>
}

async function isActive(blockchain: Blockchain, address: Address) {
  return (await blockchain.getContract(address)).accountState?.type === 'active'
}

export async function startTon(): Promise<TonSandbox> {
  const blockchain = await Blockchain.create()
  const treasury = await blockchain.treasury('earn-test-treasury')
  const client = createTonClient((address, init) => blockchain.provider(address, init))
  const minters = new Map<string, SandboxContract<JettonMinter>>()

  return {
    blockchain,
    client,
    treasury,
    async deployWallet(version, keyPair, balance = toNano('10')) {
      const wallet = tonWallet(version, keyPair.publicKey)
      // An internal message carrying the StateInit deploys the wallet, as a first top-up does on mainnet.
      await treasury.send({ to: wallet.address, value: balance, init: wallet.init, bounce: false })
      if (!(await isActive(blockchain, wallet.address))) throw new Error(`${version} wallet did not deploy`)
      return wallet
    },
    async deployJetton() {
      const uri = `https://example.invalid/jetton-${minters.size + 1}.json`
      const minter = blockchain.openContract(JettonMinter.create(treasury.address, uri))
      if (minters.has(minter.address.toRawString())) throw new Error('jetton minter address collision')
      await minter.sendDeploy(treasury.getSender())
      if (!(await isActive(blockchain, minter.address))) throw new Error('jetton minter did not deploy')
      minters.set(minter.address.toRawString(), minter)
      return minter.address
    },
    async mintJetton(master, owner, amount) {
      const minter = minters.get(master.toRawString())
      if (!minter) throw new Error(`jetton ${master.toRawString()} was not deployed by this sandbox`)
      const result = await minter.sendMint(treasury.getSender(), owner, amount)
      const failed = result.transactions.find((tx) => tx.description.type === 'generic' && tx.description.aborted)
      if (failed) throw new Error(`mint aborted in a transaction to ${failed.inMessage?.info.dest?.toString()}`)
    },
  }
}
