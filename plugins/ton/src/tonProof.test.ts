/**
 * Proofs made by real wallets, so the byte layout is checked against wallets and not only against
 * our own test signer. Vectors: the test data of WinoGarcia/TonProof.NET
 * (TonProof.Tests/Data/CheckProofRequestV4R2Mainnet.cs and CheckProofRequestV5Testnet.cs).
 */
import { describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { Address, Cell, loadStateInit } from '@ton/core'
import { createTonClient } from './client.ts'
import { decodeTonProof, tonProofHash } from './tonProof.ts'
import { verifyTonSignIn } from './signIn.ts'
import { publicKeyFromStateInit } from './walletState.ts'

const DOMAIN = 'winogarcia.github.io'

const VECTORS = [
  {
    name: 'a v4r2 wallet on mainnet',
    version: 'v4r2',
    address: '0:0522952c6d0846ad7f93dfb7987e5f77f02ee53290a26f9be85a50c689085932',
    publicKey: 'e635249f6b3fbaf9742ae1d09d8f6f01b6082ff9256d719006329405019f3198',
    timestamp: 1721827476,
    signature: 'z05SXc3qseQ/c/Fwmp+D4+qF2QWRAbP7E8mcYwbxBTqsEcG/DQdMdUUJhYx0NQTpid38oxBDYnJ9vB0cZkd/Bw==',
    payload:
      'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ1bmlxdWVfbmFtZSI6IjExMjM3N2UxLWUwYjktNGIyOC05NjJkLTRiZDAxMTFmZmY3NyIsIm5iZiI6MTcyMTgyNzA4MiwiZXhwIjoxNzIxODI3OTgyLCJpYXQiOjE3MjE4MjcwODIsImlzcyI6Iklzc3VlckZvclBheWxvYWQiLCJhdWQiOiJBdWRpZW5jZUZvclBheWxvYWQifQ.BZ6LvTKvsSPZ4H6nbwcQP3gjVgvkbYm2vPIQjJ4Gyak',
    stateInit:
      'te6cckECFgEAAwQAAgE0AgEAUQAAAAApqaMX5jUkn2s/uvl0KuHQnY9vAbYIL/klbXGQBjKUBQGfMZhAART/APSkE/S88sgLAwIBIAkEBPjygwjXGCDTH9Mf0x8C+CO78mTtRNDTH9Mf0//0BNFRQ7ryoVFRuvKiBfkBVBBk+RDyo/gAJKTIyx9SQMsfUjDL/1IQ9ADJ7VT4DwHTByHAAJ9sUZMg10qW0wfUAvsA6DDgIcAB4wAhwALjAAHAA5Ew4w0DpMjLHxLLH8v/CAcGBQAK9ADJ7VQAbIEBCNcY+gDTPzBSJIEBCPRZ8qeCEGRzdHJwdIAYyMsFywJQBc8WUAP6AhPLassfEss/yXP7AABwgQEI1xj6ANM/yFQgR4EBCPRR8qeCEG5vdGVwdIAYyMsFywJQBs8WUAT6AhTLahLLH8s/yXP7AAIAbtIH+gDU1CL5AAXIygcVy//J0Hd0gBjIywXLAiLPFlAF+gIUy2sSzMzJc/sAyEAUgQEI9FHypwICAUgTCgIBIAwLAFm9JCtvaiaECAoGuQ+gIYRw1AgIR6STfSmRDOaQPp/5g3gSgBt4EBSJhxWfMYQCASAODQARuMl+1E0NcLH4AgFYEg8CASAREAAZrx32omhAEGuQ64WPwAAZrc52omhAIGuQ64X/wAA9sp37UTQgQFA1yH0BDACyMoHy//J0AGBAQj0Cm+hMYALm0AHQ0wMhcbCSXwTgItdJwSCSXwTgAtMfIYIQcGx1Z70ighBkc3RyvbCSXwXgA/pAMCD6RAHIygfL/8nQ7UTQgQFA1yH0BDBcgQEI9ApvoTGzkl8H4AXTP8glghBwbHVnupI4MOMNA4IQZHN0crqSXwbjDRUUAIpQBIEBCPRZMO1E0IEBQNcgyAHPFvQAye1UAXKwjiOCEGRzdHKDHrFwgBhQBcsFUAPPFiP6AhPLassfyz/JgED7AJJfA+IAeAH6APQEMPgnbyIwUAqhIb7y4FCCEHBsdWeDHrFwgBhQBMsFJs8WWPoCGfQAy2kXyx9SYMs/IMmAQPsABru64+A=',
  },
  {
    name: 'a W5 beta wallet on testnet',
    version: 'v5beta',
    address: '0:7afd7563d8fd084d35060278320769743905983b8ea43c5b16fb6e3dc0a190dd',
    publicKey: 'c5134fcb39879c2cf81ffdc347353d031cf184538130fdd42688152088bf69ba',
    timestamp: 1721812530,
    signature: '8ab+IBU83nga6aNznUNEHr3OgN1L7I2raVomWNrhEElTFI1a3VvAz4mzvQbaYiaCY+WftHZrJnSiEgnbRYojDA==',
    payload:
      'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ1bmlxdWVfbmFtZSI6IjQxNDA1NzUxLTNlZjEtNDZhYi04ZDJiLTRkMjE4NWVhZjI2ZSIsIm5iZiI6MTcyMTgxMjQ4OCwiZXhwIjoxNzIxODEzMzg4LCJpYXQiOjE3MjE4MTI0ODgsImlzcyI6Iklzc3VlckZvclBheWxvYWQiLCJhdWQiOiJBdWRpZW5jZUZvclBheWxvYWQifQ.rzJ1tpq-jDp19pDwWO8ZNp8T9ZkME9CZXIppWc5FYGo',
    stateInit:
      'te6cckEBAwEAWQACATQCAQBdAAAAAH////6AAAAAAABiiaflnMPOFnwP/uGjmp6BjnjCKcCYfuoTRAqQRF+03SAIQgLkzzsvTG1qYeoPK1RH0mZ4WyavNjfbLe7mvNGqgm80EpjwGJs=',
  },
] as const

const offline = createTonClient(() => {
  throw new Error('real-wallet vectors carry their stateInit; no chain access expected')
})

function verifyVector(v: (typeof VECTORS)[number], over: { timestamp?: number; payload?: string } = {}) {
  const proof = {
    timestamp: over.timestamp ?? v.timestamp,
    domain: { lengthBytes: DOMAIN.length, value: DOMAIN },
    signature: v.signature,
    payload: over.payload ?? v.payload,
    stateInit: v.stateInit,
  }
  return verifyTonSignIn(offline, {
    address: v.address,
    domain: DOMAIN,
    uri: `https://${DOMAIN}`,
    chainId: '-239',
    nonce: 'n/a',
    issuedAt: new Date((v.timestamp - 30) * 1000),
    expiresAt: new Date((v.timestamp + 270) * 1000),
    message: v.payload,
    signature: Buffer.from(JSON.stringify(proof)).toString('base64'),
    now: new Date((v.timestamp + 5) * 1000),
  })
}

describe('ton_proof from real wallets', () => {
  for (const v of VECTORS) {
    test(`${v.name}: verifies`, async () => {
      expect(await verifyVector(v)).toEqual({ valid: true })
    })

    test(`${v.name}: the key is read from the stateInit of a known ${v.version} wallet`, () => {
      const init = loadStateInit(Cell.fromBase64(v.stateInit).beginParse())
      const key = publicKeyFromStateInit(init)
      expect(key?.version).toBe(v.version)
      expect(key?.publicKey.toString('hex')).toBe(v.publicKey)
    })

    test(`${v.name}: one second off the timestamp breaks it`, async () => {
      expect((await verifyVector(v, { timestamp: v.timestamp + 1 })).valid).toBe(false)
    })
  }
})

describe('tonProofHash layout', () => {
  test('workchain big-endian, domain length and timestamp little-endian, payload last', () => {
    // The message spelled out byte by byte from the TON Connect spec, for one small input.
    const message = Buffer.concat([
      Buffer.from('ton-proof-item-v2/'),
      Buffer.from('00000000', 'hex'), // workchain 0, int32 BE
      Buffer.alloc(32, 0x11), // address hash
      Buffer.from('03000000', 'hex'), // domain length 3, uint32 LE
      Buffer.from('a.b'),
      Buffer.from('0504030201000000', 'hex'), // timestamp 0x0102030405, uint64 LE
      Buffer.from('p'),
    ])
    const inner = createHash('sha256').update(message).digest()
    const expected = createHash('sha256')
      .update(Buffer.concat([Buffer.from('ffff', 'hex'), Buffer.from('ton-connect'), inner]))
      .digest()
    expect(tonProofHash(new Address(0, Buffer.alloc(32, 0x11)), 'a.b', 0x0102030405, 'p').toString('hex')).toBe(
      expected.toString('hex'),
    )
  })
})

describe('decodeTonProof', () => {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64')
  const base = {
    timestamp: 1700000000,
    domain: { lengthBytes: 3, value: 'a.b' },
    signature: Buffer.alloc(64, 9).toString('base64'),
    payload: 'x',
  }

  test('accepts base64 and base64url, numeric and string timestamps', () => {
    const std = b64(base)
    const url = Buffer.from(JSON.stringify(base)).toString('base64url')
    for (const field of [std, url, b64({ ...base, timestamp: '1700000000' })]) {
      const r = decodeTonProof(field)
      expect(r.ok).toBe(true)
      if (r.ok) expect(r.timestamp).toBe(1700000000)
    }
  })

  test('rejects a string timestamp that is not plain digits', () => {
    for (const timestamp of ['1e9', ' 1700000000', '0x65', '', '17000000001234567']) {
      expect(decodeTonProof(b64({ ...base, timestamp })).ok).toBe(false)
    }
  })
})
