/**
 * Another service the process talks to (another chain's node, say), answering at once. Bun's `fetch` holds a fixed
 * number of requests in flight for the whole process and queues the rest, whatever their host: how long one request
 * to this server takes shows whether a slow endpoint's requests hold every slot.
 */
export function anotherServer() {
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('ok') })
  return {
    /** Milliseconds one request to it took, answer read. */
    async answerMs(): Promise<number> {
      const started = performance.now()
      const text = await (await fetch(`http://127.0.0.1:${server.port}`)).text()
      if (text !== 'ok') throw new Error(`the other server answered ${JSON.stringify(text)}`)
      return performance.now() - started
    },
    stop: () => server.stop(true),
  }
}
