/**
 * For tests: a toncenter-style JSON-RPC endpoint over HTTP. No TON network runs behind HTTP here (the sandbox is
 * in-process), so a test that must go through TonClient's HTTP path answers each call itself.
 */
export interface ToncenterCall {
  id: number
  method: string
}

export function toncenterStandIn(answer: (call: ToncenterCall, request: Request) => Response | Promise<Response>) {
  const node = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: async (request) => answer((await request.json()) as ToncenterCall, request) })
  return { url: `http://127.0.0.1:${node.port}/api/v2/jsonRPC`, stop: () => node.stop(true) }
}
