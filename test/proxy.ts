/** Network faults for tests: a real service behind a proxy that a test can cut. */
/**
 * A TCP proxy (to Redis, to PostgreSQL) that can cut the route silently, as a crashed host or a dropped route does:
 * connections stay open but nothing passes, and stay dead after the route is back; only connections
 * made afterwards get through.
 */
export function cuttableProxy(targetPort: number) {
  type Link = { up?: Socket<Link>; pending: Uint8Array[]; dead: boolean }
  type Socket<T> = import('bun').Socket<T>
  const links = new Set<Link>()
  let cut = false
  const server = Bun.listen<Link>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(down) {
        const link: Link = { pending: [], dead: cut }
        down.data = link
        links.add(link)
        if (link.dead) return
        void Bun.connect<Link>({
          hostname: '127.0.0.1',
          port: targetPort,
          data: link,
          socket: {
            data(_, chunk) {
              if (!link.dead) down.write(chunk)
            },
            close() {
              if (!link.dead) down.end()
            },
          },
        }).then((up) => {
          link.up = up
          for (const chunk of link.pending.splice(0)) up.write(chunk)
        })
      },
      data(down, chunk) {
        const link = down.data
        if (link.dead) return
        if (link.up) link.up.write(chunk)
        else link.pending.push(new Uint8Array(chunk))
      },
      close(down) {
        links.delete(down.data)
        down.data.up?.end()
      },
    },
  })
  return {
    port: server.port,
    cut() {
      cut = true
      for (const l of links) l.dead = true
    },
    restore() {
      cut = false
    },
    /** Cuts the oldest open connection alone, as a backend gone silent while the others still answer. */
    cutOne() {
      const link = [...links].find((l) => !l.dead)
      if (link) link.dead = true
    },
    stop: () => server.stop(true),
  }
}
