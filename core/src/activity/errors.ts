import { InvalidArgumentError } from '../errors.ts'

export class TooManyAddressesError extends InvalidArgumentError {
  constructor(given: number, max: number) {
    super(`addresses lists ${given} addresses; at most ${max} per request`, { addresses: `at most ${max} addresses` })
  }
}
