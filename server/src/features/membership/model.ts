import { ECOSYSTEM_IDS } from '@earn/core'
import { t } from 'elysia'

const Address = t.String({ minLength: 1, maxLength: 200, description: 'Wallet address in any form the ecosystem accepts' })
const Ecosystem = t.String({ description: `One of ${ECOSYSTEM_IDS.join(', ')}`, examples: ['evm'] })

export const CheckQuery = t.Object({
  address: Address,
  walletEcosystem: t.Optional(t.String({ ...Ecosystem, default: 'evm' })),
})

export const AgreementBody = t.Object({
  address: Address,
  walletEcosystem: Ecosystem,
  url: t.String({ minLength: 1, maxLength: 2048, description: 'URL of your application; its host is the sign-in domain, and the message carries it as a URL parser writes it (an international name in punycode, other characters percent-encoded: at most 2,048 so)' }),
  chainId: t.Optional(
    t.String({
      maxLength: 64,
      description: 'EVM chain id, default "1"; not needed for solana or ton (their messages name no chain, and none is recorded unless given in the ecosystem\'s own form: "mainnet" or CAIP-2, "-239")',
    }),
  ),
})

export const CreateBody = t.Object({
  address: Address,
  walletEcosystem: Ecosystem,
  signature: t.String({ minLength: 1, maxLength: 16_384, description: 'Signature of the agreement message (see the docs per ecosystem)' }),
  nonce: t.String({ minLength: 1, maxLength: 64 }),
  distributorId: t.Optional(t.String({ minLength: 1, maxLength: 64 })),
})

export const MembershipStatus = t.Object({ isMember: t.Boolean() })
export const Agreement = t.Object({ nonce: t.String(), message: t.String() })
export const CreateResult = t.Object({ isMember: t.Boolean(), error: t.String() })
