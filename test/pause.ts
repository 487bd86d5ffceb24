/**
 * A pause of the process's own inside an I/O callback, as a long synchronous request handler makes one: after it, Bun
 * runs expired timers before it reads the sockets, where answers to requests sent before it have been waiting.
 * `pause()` resolves once the handler has held the thread for `ms`.
 */
export function pausingHandler(ms: number) {
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: () => {
      for (const end = performance.now() + ms; performance.now() < end; );
      return new Response('done')
    },
  })
  return {
    pause: async () => (await fetch(`http://127.0.0.1:${server.port}/`)).text(),
    stop: () => server.stop(true),
  }
}
