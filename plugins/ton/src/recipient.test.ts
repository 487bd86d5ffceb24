/**
 * What counts as a jetton wallet or master when a treasury or vault is checked. The contracts here are stand-in
 * providers (no FunC compiler runs in these tests): each address answers its get-methods as given, or fails them
 * with the exit code a contract without the method gives.
 */
import { expect, test } from 'bun:test'
import { Address, beginCell, type ContractProvider, type TupleItem, TupleReader } from '@ton/core'
import { createTonClient } from './client.ts'
import { unfitRecipient } from './recipient.ts'

const at = (fill: number) => new Address(0, Buffer.alloc(32, fill))
const [contract, owner, master, other] = [at(1), at(2), at(3), at(4)]
const slice = (a: Address): TupleItem => ({ type: 'slice', cell: beginCell().storeAddress(a).endCell() })
const cell: TupleItem = { type: 'cell', cell: beginCell().endCell() }
const int = (n: bigint): TupleItem => ({ type: 'int', value: n })

/** Each address's get-methods; a method not given fails as one the contract does not have. */
function chain(methods: Record<string, Record<string, TupleItem[]>>) {
  return createTonClient(
    (address) =>
      ({
        getState: async () => ({ state: { type: 'active' }, balance: 5n }),
        get: async (name: string) => {
          const stack = methods[address.toRawString()]?.[name]
          if (!stack) throw new Error('Unable to execute get method. Got exit_code: 11')
          return { stack: new TupleReader(stack) }
        },
      }) as unknown as ContractProvider,
  )
}

const tep74WalletData = [int(7n), slice(owner), slice(master), cell]
const tep74JettonData = [int(1000n), int(-1n), slice(owner), cell, cell]

test('a jetton wallet is one whose master names it for its owner: refused', async () => {
  const real = chain({ [contract.toRawString()]: { get_wallet_data: tep74WalletData }, [master.toRawString()]: { get_wallet_address: [slice(contract)] } })
  expect((await unfitRecipient(real, contract)).reason).toBe('is a jetton wallet, not a wallet (its owner)')
})

test("a contract with a get_wallet_data of its own (another shape, or one no master vouches for) is taken", async () => {
  const ownShape = chain({ [contract.toRawString()]: { get_wallet_data: [int(1n), int(2n)] } })
  expect((await unfitRecipient(ownShape, contract)).reason).toBeUndefined()
  const unvouched = chain({ [contract.toRawString()]: { get_wallet_data: tep74WalletData }, [master.toRawString()]: { get_wallet_address: [slice(other)] } })
  expect((await unfitRecipient(unvouched, contract)).reason).toBeUndefined()
  const noMaster = chain({ [contract.toRawString()]: { get_wallet_data: tep74WalletData } })
  expect((await unfitRecipient(noMaster, contract)).reason).toBeUndefined()
})

test('a jetton master is refused, unless it is the one the address may be (a vault issuing its own receipt jetton)', async () => {
  const minter = chain({ [contract.toRawString()]: { get_jetton_data: tep74JettonData } })
  expect((await unfitRecipient(minter, contract)).reason).toBe('is a jetton master, not a wallet (its owner)')
  expect((await unfitRecipient(minter, contract, contract)).reason).toBeUndefined()
  const ownShape = chain({ [contract.toRawString()]: { get_jetton_data: [int(1n)] } })
  expect((await unfitRecipient(ownShape, contract)).reason).toBeUndefined()
})
