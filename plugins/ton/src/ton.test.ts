import { runEcosystemConformance } from '@earn/plugin-conformance'
import { toNano } from '@ton/core'
import { keyPairFromSeed, mnemonicNew, mnemonicToPrivateKey } from '@ton/crypto'
import { signTonProof, startTon, tonWallet } from '../../../test/chains/ton.ts'
import { ton } from './index.ts'

runEcosystemConformance(ton, async () => {
  const chain = await startTon()
  const funded = await chain.deployWallet('v4r2', keyPairFromSeed(Buffer.alloc(32, 11)), toNano('5'))
  const { address } = funded
  const vault = await chain.deployWallet('v4r2', keyPairFromSeed(Buffer.alloc(32, 12)), toNano('1'))
  const base = await chain.deployJetton()
  const receipt = await chain.deployJetton()
  await chain.mintJetton(base, address, 1_000_000n)
  return {
    client: chain.client,
    chainId: '-239',
    addressForms: [
      address.toRawString(),
      `0:${address.toRawString().slice(2).toUpperCase()}`,
      address.toString({ bounceable: true }),
      address.toString({ bounceable: false }),
      address.toString({ bounceable: false, urlSafe: false }),
      address.toString({ bounceable: true, testOnly: true }),
      address.toString({ bounceable: false, testOnly: true }),
    ],
    invalidAddresses: [
      '',
      'not an address',
      `-1:${address.toRawString().slice(2)}`,
      `0:${address.toRawString().slice(3)}`,
      address.toString().slice(0, -1) + (address.toString().endsWith('A') ? 'B' : 'A'),
      '0x52908400098527886E0F7030069857D2E4169EE7',
    ],
    async newSigner() {
      // A fresh wallet each time, as TON Connect reports it: v5r1, not yet deployed, with its stateInit.
      const keyPair = await mnemonicToPrivateKey(await mnemonicNew(24))
      const wallet = tonWallet('v5r1', keyPair.publicKey)
      return {
        address: wallet.address.toString({ bounceable: false }),
        async sign(message, p) {
          return signTonProof({ keyPair, address: wallet.address, domain: p.domain, payload: message, stateInit: wallet.init })
        },
      }
    },
    balance: {
      params: { chainId: '-239', owner: address.toRawString(), token: 'native' },
      expected: (await chain.blockchain.getContract(address)).balance,
    },
    build: {
      params: {
        kind: 'deposit',
        chainId: '-239',
        owner: address.toRawString(),
        opportunity: {
          id: '6d1e0c4a-0000-4000-8000-000000000006',
          chainId: '-239',
          vaultAddress: vault.address.toRawString(),
          baseToken: base.toRawString(),
          receiptToken: receipt.toRawString(),
        },
        amount: 1_000n,
        tag: 'earn:v1:conformance:action:mac',
        slippageBps: 50,
        tokenIn: base.toRawString(),
        mode: 'direct',
      },
      expectedTypes: ['deposit'],
    },
    // The vault's assets are its jetton wallet's balance of the base jetton (none yet); a wallet is no jetton master.
    vault: {
      params: { chainId: '-239', vaultAddress: vault.address.toRawString(), baseToken: base.toRawString(), receiptToken: receipt.toRawString() },
      expected: { decimals: 9, totalAssets: 0n },
      wrong: { params: { chainId: '-239', vaultAddress: vault.address.toRawString(), baseToken: address.toRawString(), receiptToken: receipt.toRawString() }, field: 'baseToken' },
    },
    unknownTxHash: 'ab'.repeat(32),
  }
})
