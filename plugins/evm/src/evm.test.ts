import { afterAll } from 'bun:test'
import { runEcosystemConformance, type ConformanceFixtures } from '@earn/plugin-conformance'
import { parseUnits } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { deployToken, deployVault, mintToken, startAnvil, type Anvil } from '../../../test/chains/evm.ts'
import { evmClientFromPublicClients, type EvmClient } from './client.ts'
import { evm } from './index.ts'

let anvil: Anvil | undefined
afterAll(() => anvil?.stop())

async function fixtures(): Promise<ConformanceFixtures<EvmClient>> {
  anvil = await startAnvil()
  const holder = privateKeyToAccount(generatePrivateKey()).address
  const token = await deployToken(anvil, { decimals: 6 })
  const amount = parseUnits('42.5', 6)
  await mintToken(anvil, token, holder, amount)
  const vault = (await deployVault(anvil, token)).toLowerCase()
  const checksummed = privateKeyToAccount(generatePrivateKey()).address
  return {
    client: evmClientFromPublicClients({ [anvil.chainId]: anvil.publicClient }),
    chainId: anvil.chainId,
    addressForms: [checksummed, checksummed.toLowerCase(), `0x${checksummed.slice(2).toUpperCase()}`],
    invalidAddresses: [
      '',
      '0x',
      checksummed.slice(0, -1),
      `${checksummed}00`,
      // The EIP-55 test vector with one letter's case flipped: a wrong checksum.
      '0x5aAEb6053F3E94C9b9A09f33669435E7Ef1BeAed',
      checksummed.slice(2),
      'EQD4FPq-PRDieyQKkizFTRtSDyucUIqrj0v_zXJmqaDp6_0t',
      '0:83dfd552e63729b472fcbcc8c45ebcc6691702558b68ec7527e1ba403a0f31a8',
    ],
    async newSigner() {
      const account = privateKeyToAccount(generatePrivateKey())
      return { address: account.address, sign: (message) => account.signMessage({ message }) }
    },
    balance: { params: { chainId: anvil.chainId, owner: holder.toLowerCase(), token }, expected: amount },
    // The holder has allowed the vault nothing yet, so a deposit needs an approve first.
    build: {
      params: {
        kind: 'deposit',
        chainId: anvil.chainId,
        owner: holder.toLowerCase(),
        opportunity: { id: 'conformance', chainId: anvil.chainId, vaultAddress: vault, baseToken: token, receiptToken: vault },
        tokenIn: token,
        mode: 'direct',
        amount,
        tag: 'earn:v1:conformance:action-1:00ff00ff',
        slippageBps: 50,
      },
      expectedTypes: ['approve', 'deposit'],
    },
    // An ERC-4626 vault names its tokens on chain; an account with no code is no vault.
    vault: {
      params: { chainId: anvil.chainId, vaultAddress: vault },
      expected: { decimals: 6, totalAssets: 0n },
      wrong: { params: { chainId: anvil.chainId, vaultAddress: holder.toLowerCase() }, field: 'vaultAddress' },
    },
    unknownTxHash: `0x${'ab'.repeat(32)}`,
  }
}

runEcosystemConformance(evm, fixtures)
