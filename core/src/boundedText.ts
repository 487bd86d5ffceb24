/**
 * A chain endpoint's answer read to a limit: the plugins' RPCs are the operator's to name, but an endpoint that
 * streams megabytes (broken, or a compression bomb) must not fill the process's memory or hold its thread parsing.
 */

/** viem's own limit on an answer's body, used for every chain's. */
export const MAX_ANSWER_BYTES = 10 * 1024 * 1024

/** The body as text, `tooLarge()` thrown past `maxBytes` (declared, or counted as it arrives once decompressed). */
export async function readBoundedText(response: Response, tooLarge: () => Error, maxBytes = MAX_ANSWER_BYTES): Promise<string> {
  const declared = response.headers.get('content-length')
  if (declared !== null && Number(declared) > maxBytes) {
    await response.body?.cancel()
    throw tooLarge()
  }
  // The length a plain body declares is all it can carry (its framing ends there): read at once. A compressed one
  // declares what it is sent as, not what it inflates to, and a chunked one is framed by its chunks whatever length it
  // also declares (Bun's fetch follows the chunks: an audit's 60 MiB came under `content-length: 2`), so those are
  // counted as they come.
  const framedByLength = declared !== null && !response.headers.has('content-encoding') && !response.headers.has('transfer-encoding')
  if (framedByLength || !response.body) return response.text()
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return text + decoder.decode()
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel()
      throw tooLarge()
    }
    text += decoder.decode(value, { stream: true })
  }
}
