// What memgate answers about a check, as the service, the library and memgate/client all
// give it: the types of the contract's schemas (src/shared/contract.ts), imported as types
// only, so that the client never loads TypeBox at run time.
export type { Decision, LimitStatus, Reservation, Slot } from './contract.js';
