/**
 * TON test harness: an in-process chain (@ton/sandbox) with real wallet contracts and the standard
 * TEP-74 jetton, and a TON Connect wallet stand-in that signs `ton_proof` and sends `sendTransaction`
 * requests with a real key pair. Every transaction the harness's sends produce is kept, so the
 * plugin's client finds transactions by hash as toncenter's index does in production.
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
  Dictionary,
  external,
  internal,
  SendMode,
  storeStateInit,
  toNano,
  type Contract,
  type ContractProvider,
  type MessageRelaxed,
  type Sender,
  type StateInit,
  type Transaction,
} from '@ton/core'
import { keyPairFromSeed, sha256_sync, sign, type KeyPair } from '@ton/crypto'
import { WalletContractV3R2, WalletContractV4, WalletContractV5R1 } from '@ton/ton'
import {
  Blockchain,
  createShardAccount,
  type BlockchainTransaction,
  type SandboxContract,
  type SendMessageResult,
  type TreasuryContract,
} from '@ton/sandbox'
// The standard (discoverable) jetton minter and wallet, compiled, shipped as BoCs under MIT by
// @ton-community/assets-sdk; deep imports keep the rest of that package (S3, Pinata) out.
import { jettonMinterCode } from '@ton-community/assets-sdk/dist/jetton/contracts/build/jetton-minter.js'
import { jettonWalletCode } from '@ton-community/assets-sdk/dist/jetton/contracts/build/jetton-wallet.js'
import * as tasm from 'ton-assembly'
import { createTonClient, MAX_LISTED_TRANSACTIONS, messageCells, parseTxHash, type TonChainClient, type TonConnectRequest, type TonProof } from '@earn/plugin-ton'

export type TonWalletVersion = 'v3r2' | 'v4r2' | 'v5r1'

export interface TonWallet {
  version: TonWalletVersion
  address: Address
  init: { code: Cell; data: Cell }
}

function walletContract(version: TonWalletVersion, publicKey: Buffer) {
  return version === 'v3r2'
    ? WalletContractV3R2.create({ workchain: 0, publicKey })
    : version === 'v4r2'
      ? WalletContractV4.create({ workchain: 0, publicKey })
      : WalletContractV5R1.create({ publicKey })
}

interface TransferArgs {
  seqno: number
  secretKey: Buffer
  messages: MessageRelaxed[]
  sendMode: SendMode
  timeout?: number
}

/** The signed body of a wallet's external transfer message (each wallet version has its own layout). */
function signTransfer(version: TonWalletVersion, publicKey: Buffer, args: TransferArgs): Cell {
  switch (version) {
    case 'v3r2':
      return WalletContractV3R2.create({ workchain: 0, publicKey }).createTransfer(args)
    case 'v4r2':
      return WalletContractV4.create({ workchain: 0, publicKey }).createTransfer(args)
    case 'v5r1':
      return WalletContractV5R1.create({ publicKey }).createTransfer(args)
  }
}

/** The wallet a key pair controls, as TON Connect wallets derive it (subwallet 0 / mainnet id). */
export function tonWallet(version: TonWalletVersion, publicKey: Buffer): TonWallet {
  const contract = walletContract(version, publicKey)
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

  /** The content is part of the address, so distinct contents give distinct jettons. */
  static create(admin: Address, content: Cell, walletCode = JETTON_WALLET_CODE): JettonMinter {
    const data = beginCell().storeCoins(0).storeAddress(admin).storeRef(content).storeRef(walletCode).endCell()
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

/**
 * TEP-64 content: off-chain (0x01 then the URI), or on-chain (0x00 then a dict of sha256(key) to
 * snake text) when `decimals` is given, as jettons that state their decimals on chain do.
 */
export function jettonContent(p: { uri: string; decimals?: number }): Cell {
  if (p.decimals === undefined) return beginCell().storeUint(1, 8).storeStringTail(p.uri).endCell()
  const dict = Dictionary.empty(Dictionary.Keys.BigUint(256), Dictionary.Values.Cell())
  const put = (key: string, value: string) =>
    dict.set(BigInt(`0x${sha256_sync(key).toString('hex')}`), beginCell().storeUint(0, 8).storeStringTail(value).endCell())
  put('uri', p.uri)
  put('decimals', String(p.decimals))
  return beginCell().storeUint(0, 8).storeDict(dict).endCell()
}

export interface DeployJettonOptions {
  /** Defaults to a URI unique within this sandbox, so each call makes a new jetton. */
  uri?: string
  /** States decimals in on-chain metadata; omitted, the metadata is off-chain (and readers assume 9). */
  decimals?: number
  /** The code of its wallets; the standard TEP-74 wallet's by default (see `feeTakingWalletCode`). */
  walletCode?: Cell
}

/**
 * The standard jetton wallet's code, changed so that a wallet credits 1% less than each `internal_transfer` it
 * receives carries, and says so in its `transfer_notification` (the 1% is burnt: a transfer fee taken on receipt).
 * Patched in its assembly, as nothing here compiles FunC.
 */
export function feeTakingWalletCode(): Cell {
  const code = tasm.text.print(tasm.runtime.decompileCell(JETTON_WALLET_CODE))
  // Where the received amount is read and added to the balance: amount - amount / 100 is added instead.
  const reads = 'LDU 64\n        LDGRAMS\n        XCPU s5 s1\n        ADD'
  if (code.split(reads).length !== 2) throw new Error('the standard jetton wallet code is not the one this patch knows')
  const patched = code.replace(reads, 'LDU 64\n        LDGRAMS\n        SWAP\n        DUP\n        PUSHINT_8 100\n        DIV\n        SUB\n        SWAP\n        XCPU s5 s1\n        ADD')
  const parsed = tasm.text.parse('wallet.tasm', patched)
  if (parsed.$ !== 'ParseSuccess') throw new Error(`the patched jetton wallet does not assemble: ${JSON.stringify(parsed.error)}`)
  return tasm.runtime.compileCell(parsed.instructions)
}

/** What a wallet's `sendTransaction` produced: the wallet's own transaction first. */
export interface SentRequest {
  /** The wallet transaction's hash, hex: what the wallet reports and explorers show. */
  hash: string
  transaction: BlockchainTransaction
  /** Every transaction the request caused (wallet, jetton wallets, vault, excesses back). */
  transactions: BlockchainTransaction[]
}

export interface TonSandbox {
  blockchain: Blockchain
  /** The plugin's client over the sandbox: the same ContractProvider interface TonClient gives. */
  client: TonChainClient
  /** A funded wallet that pays for deployments and mints. */
  treasury: SandboxContract<TreasuryContract>
  /** Funds and deploys the wallet a key pair controls; `balance` is what it holds afterwards, less fees. */
  deployWallet(version: TonWalletVersion, keyPair: KeyPair, balance?: bigint): Promise<TonWallet>
  /** Deploys a standard jetton minter (admin: the treasury); returns its master address. */
  deployJetton(options?: DeployJettonOptions): Promise<Address>
  /** Mints `amount` base units of `master` to `owner`; rejects if any transaction of the mint aborts. */
  mintJetton(master: Address, owner: Address, amount: bigint): Promise<void>
  /**
   * What a TON Connect wallet does with a `sendTransaction` request: checks it is addressed to this
   * wallet and not expired, signs one external message carrying exactly the request's messages
   * (address, amount, payload, bounce flag from the address form) and sends it.
   */
  sendTonConnect(wallet: TonWallet, keyPair: KeyPair, request: TonConnectRequest): Promise<SentRequest>
  /**
   * Puts a contract at `address` whose every run fails (its code is one instruction, THROW 50), as an emulator
   * can: a stand-in for a contract that refuses what it receives, where no real deployment could land.
   */
  placeFailingContract(address: Address): Promise<void>
  /** Keeps the transactions of a send made outside the helpers above, so they can be found by hash. */
  record<R extends SendMessageResult>(result: R): R
  /** A kept transaction by hash, hex or base64; null when the sandbox never produced it. */
  findTransaction(hash: string): Transaction | null
}

async function isActive(blockchain: Blockchain, address: Address) {
  return (await blockchain.getContract(address)).accountState?.type === 'active'
}

/** The account a transaction ran on, raw; the sandbox runs every account in the basechain. */
const accountOf = (tx: Transaction) => `0:${tx.address.toString(16).padStart(64, '0')}`

const aborted = (tx: Transaction) => tx.description.type === 'generic' && tx.description.aborted

/** The sandbox's clock when a test set one, else the system's (as the sandbox itself does). */
const sandboxNowMs = (blockchain: Blockchain) => (blockchain.now ?? Math.floor(Date.now() / 1000)) * 1000

/**
 * The sample TON opportunity's chain, fixed by construction: the treasury's address follows from its
 * seed, a minter's from its admin (the treasury), content and code, and the vault is the v4r2 wallet of
 * a key derived from a fixed seed. A catalog entry can therefore name these addresses, as
 * catalog/local.json names anvil's deployments.
 */
export const SAMPLE_TON = {
  /** tUSD on TON, decimals stated on chain. */
  baseToken: { uri: 'https://example.invalid/earn-sample/tusd.json', decimals: 6, symbol: 'tUSD' },
  /** The vault's receipt jetton (an operator-run vault mints it; the sandbox's treasury stands in). */
  receiptToken: { uri: 'https://example.invalid/earn-sample/vtusd.json', decimals: 6, symbol: 'vtUSD' },
  /** The vault: a wallet its operator runs, holding deposits and receiving returned receipt jettons. */
  vaultSeed: 'earn-sample-ton-vault',
} as const

export interface SampleTon {
  baseToken: Address
  receiptToken: Address
  vault: TonWallet
  vaultKeyPair: KeyPair
}

/** The vault's key pair: sha256 of the fixed seed text. */
export const sampleVaultKeyPair = (): KeyPair => keyPairFromSeed(sha256_sync(SAMPLE_TON.vaultSeed))

/** Deploys exactly the sample: the vault wallet (1 TON), then the two minters. Same addresses every run. */
export async function deploySampleTon(chain: TonSandbox): Promise<SampleTon> {
  const vaultKeyPair = sampleVaultKeyPair()
  const vault = await chain.deployWallet('v4r2', vaultKeyPair, toNano('1'))
  const baseToken = await chain.deployJetton({ uri: SAMPLE_TON.baseToken.uri, decimals: SAMPLE_TON.baseToken.decimals })
  const receiptToken = await chain.deployJetton({ uri: SAMPLE_TON.receiptToken.uri, decimals: SAMPLE_TON.receiptToken.decimals })
  return { baseToken, receiptToken, vault, vaultKeyPair }
}

export async function startTon(): Promise<TonSandbox> {
  const blockchain = await Blockchain.create()
  const treasury = await blockchain.treasury('earn-test-treasury')
  const minters = new Map<string, SandboxContract<JettonMinter>>()
  // Every transaction the helpers' sends produced, by hex hash and by the hash of the message it received: the
  // sandbox has no lookup by hash alone (toncenter's index stands there in production).
  const ledger = new Map<string, BlockchainTransaction>()
  const byInMessage = new Map<string, BlockchainTransaction>()
  // And by each message it sent, and per account in the order they ran, as the index lists an account's.
  const byOutMessage = new Map<string, BlockchainTransaction>()
  const byAccount = new Map<string, BlockchainTransaction[]>()

  const record = <R extends SendMessageResult>(result: R): R => {
    for (const tx of result.transactions) {
      ledger.set(tx.hash().toString('hex'), tx)
      const { inMessage: received, outMessages } = messageCells(tx)
      if (received) byInMessage.set(received.hash().toString('hex'), tx)
      for (const sent of outMessages.values()) byOutMessage.set(sent.hash().toString('hex'), tx)
      const account = accountOf(tx)
      byAccount.set(account, [...(byAccount.get(account) ?? []), tx].sort((a, b) => (a.lt < b.lt ? -1 : a.lt > b.lt ? 1 : 0)))
    }
    return result
  }
  const findTransaction = (hash: string): Transaction | null => ledger.get(parseTxHash(hash)) ?? null
  const client = createTonClient((address, init) => blockchain.provider(address, init), {
    findTransaction: async (hash) => findTransaction(hash),
    findTransactionByMessage: async (hash) => byInMessage.get(hash) ?? null,
    findSendingTransaction: async (hash) => byOutMessage.get(hash) ?? null,
    // As toncenter's index answers (lookup.ts `recent`): the oldest after `afterLt`, else the latest since `since`.
    listTransactions: async (account, window) => {
      const all = byAccount.get(account.toRawString()) ?? []
      const limit = Math.min(window.limit, MAX_LISTED_TRANSACTIONS)
      const { afterLt, since } = window
      if (afterLt !== undefined) return all.filter((tx) => tx.lt > afterLt).slice(0, limit)
      return all.filter((tx) => tx.now >= (since ?? 0)).slice(-limit)
    },
    now: () => sandboxNowMs(blockchain),
  })

  return {
    blockchain,
    client,
    treasury,
    record,
    findTransaction,
    async deployWallet(version, keyPair, balance = toNano('10')) {
      const wallet = tonWallet(version, keyPair.publicKey)
      // An internal message carrying the StateInit deploys the wallet, as a first top-up does on mainnet.
      record(await treasury.send({ to: wallet.address, value: balance, init: wallet.init, bounce: false }))
      if (!(await isActive(blockchain, wallet.address))) throw new Error(`${version} wallet did not deploy`)
      return wallet
    },
    async deployJetton(options = {}) {
      const uri = options.uri ?? `https://example.invalid/jetton-${minters.size + 1}.json`
      const content = jettonContent({ uri, decimals: options.decimals })
      const minter = blockchain.openContract(JettonMinter.create(treasury.address, content, options.walletCode))
      if (minters.has(minter.address.toRawString())) throw new Error('jetton minter address collision')
      record(await minter.sendDeploy(treasury.getSender()))
      if (!(await isActive(blockchain, minter.address))) throw new Error('jetton minter did not deploy')
      minters.set(minter.address.toRawString(), minter)
      return minter.address
    },
    async mintJetton(master, owner, amount) {
      const minter = minters.get(master.toRawString())
      if (!minter) throw new Error(`jetton ${master.toRawString()} was not deployed by this sandbox`)
      const result = record(await minter.sendMint(treasury.getSender(), owner, amount))
      const failed = result.transactions.find(aborted)
      if (failed) throw new Error(`mint aborted in a transaction to ${failed.inMessage?.info.dest?.toString()}`)
    },
    async placeFailingContract(address) {
      // THROW n for n < 64 is the 16 bits 0xF200 | n.
      const code = beginCell().storeUint(0xf200 | 50, 16).endCell()
      await blockchain.setShardAccount(address, createShardAccount({ address, code, data: Cell.EMPTY, balance: toNano('1') }))
    },
    async sendTonConnect(wallet, keyPair, request) {
      const nowSeconds = Math.floor(sandboxNowMs(blockchain) / 1000)
      if (request.validUntil < nowSeconds) throw new Error('the request expired before it was signed')
      if (request.from && Address.parse(request.from).toRawString() !== wallet.address.toRawString())
        throw new Error(`the request is for ${request.from}, not this wallet ${wallet.address.toRawString()}`)
      const contract = walletContract(wallet.version, keyPair.publicKey)
      if (!contract.address.equals(wallet.address)) throw new Error('the key pair does not control this wallet')
      const messages = request.messages.map((m) =>
        internal({
          to: Address.parse(m.address),
          value: BigInt(m.amount),
          // Wallets take the bounce flag from the form the dApp wrote the address in.
          bounce: Address.isFriendly(m.address) ? Address.parseFriendly(m.address).isBounceable : true,
          body: m.payload ? Cell.fromBase64(m.payload) : undefined,
        }),
      )
      const seqno = await blockchain.openContract(contract).getSeqno()
      // The send mode TON Connect wallets use: fees paid apart from the amounts, and a failing message
      // skipped rather than the whole batch aborted.
      const transfer = signTransfer(wallet.version, keyPair.publicKey, {
        seqno,
        secretKey: keyPair.secretKey,
        messages,
        sendMode: SendMode.PAY_GAS_SEPARATELY | SendMode.IGNORE_ERRORS,
        timeout: request.validUntil,
      })
      const result = record(await blockchain.sendMessage(external({ to: wallet.address, body: transfer })))
      const transaction = result.transactions[0]
      if (!transaction) throw new Error('the wallet produced no transaction')
      return { hash: transaction.hash().toString('hex'), transaction, transactions: result.transactions }
    },
  }
}

/** A sender wallet holding 10 of a 6-decimal jetton, and a treasury wallet: where the tagged-transfer tests start. */
export async function transferSandbox(p: { seed: number; version: TonWalletVersion; ton: bigint }) {
  const chain = await startTon()
  const keyPair = keyPairFromSeed(Buffer.alloc(32, p.seed))
  const sender = { wallet: await chain.deployWallet(p.version, keyPair, p.ton), keyPair }
  const treasury = await chain.deployWallet('v4r2', keyPairFromSeed(Buffer.alloc(32, p.seed + 1)), toNano('1'))
  const jetton = await chain.deployJetton({ decimals: 6 })
  await chain.mintJetton(jetton, sender.wallet.address, 10_000_000n)
  return { chain, sender, treasury, jetton }
}
