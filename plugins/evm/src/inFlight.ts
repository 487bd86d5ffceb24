/**
 * A fetch that has at most `cap` requests in flight (until their headers arrive), the rest waiting their turn in
 * order (core's `inTurn`, which several fetches may share). What runs
 * a client's code goes to the node one request at a time (client.ts); past fetch's pool of kept-alive connections
 * (~64 a host) each such request opened a connection of its own and closed it after, and 300 contract-wallet sign-ins
 * at once overflowed the node's listen queue (an audit: ~1,700 connections opened for ~2,400 sign-ins, dropped ones
 * waiting ~1 s to try again). A request waits inside its own deadline: one whose signal aborts while it waits leaves
 * the queue unsent.
 */
import { type InTurn, inTurn } from '@earn/core'

export function atMostInFlight(inner: typeof fetch, cap: number | InTurn): typeof fetch {
  const limit = typeof cap === 'number' ? inTurn(cap) : cap
  return ((input: RequestInfo | URL, init?: RequestInit) => limit(() => inner(input, init), init?.signal)) as typeof fetch
}
