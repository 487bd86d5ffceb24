export * from './errors.ts'
export * from './ecosystem.ts'
