import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readBoundedText } from './boundedText.ts'

/** A raw HTTP/1.1 server, so the framing is what the test writes: chunked bodies, with a length declared or not. */
let server: Bun.TCPSocketListener
let answer = ''
beforeAll(() => {
  server = Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      data(socket) {
        socket.end(answer)
      },
    },
  })
})
afterAll(() => server?.stop(true))

const chunked = (head: string, chunks: string[]) =>
  `HTTP/1.1 200 OK\r\n${head}transfer-encoding: chunked\r\nconnection: close\r\n\r\n` + chunks.map((c) => `${c.length.toString(16)}\r\n${c}\r\n`).join('') + '0\r\n\r\n'
const read = async (limit: number) =>
  readBoundedText(await fetch(`http://127.0.0.1:${server.port}/`), () => new Error('too large'), limit).catch((e: Error) => e.message)

test('a chunked body is counted as it comes, whatever length it also declares', async () => {
  const chunks = Array.from({ length: 8 }, () => 'x'.repeat(1_000))
  answer = chunked('', chunks)
  expect(await read(4_000)).toBe('too large')
  expect(await read(8_000)).toBe(chunks.join(''))
  // Framed by its chunks, not by the 2 bytes it declares: read whole before, past the limit.
  answer = chunked('content-length: 2\r\n', chunks)
  expect(await read(4_000)).toBe('too large')
})

test('a plain body framed by its declared length is read whole within the limit, refused past it before any read', async () => {
  answer = `HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello`
  expect(await read(5)).toBe('hello')
  expect(await read(4)).toBe('too large')
})
