import { expect, test } from 'bun:test'
import { evm } from './index.ts'

test('owns positive decimal chain ids up to 2^53 - 1, as EVM_RPC_URLS and SIWE take them', () => {
  for (const id of ['1', '8453', '31337', '9007199254740991']) expect(evm.ownsChain(id), id).toBe(true)
  for (const id of ['0', '01', '-1', '1.0', '0x1', '+1', '9007199254740992', '1000000000000000000', '', 'mainnet', '-239']) expect(evm.ownsChain(id), id).toBe(false)
})
