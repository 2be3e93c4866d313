/**
 * A one-argument function made on its first call rather than as its module
 * loads. For a schema's decoder or guard: making one compiles the schema's
 * whole parser, which every start paid, as the modules loaded, for decoders
 * a run uses only once messages come (a brain's answer, a claw's tools).
 */
export const madeOnFirstCall = <A, R>(make: () => (input: A) => R): ((input: A) => R) => {
  let made: ((input: A) => R) | undefined
  return (input) => (made ??= make())(input)
}
