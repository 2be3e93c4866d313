/**
 * Fields Discord may leave out or send as null: either way the decoded value
 * has no such field (or its default). Only ever decoded.
 */
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"

/** Absent, undefined or null: the field is absent. */
export const nullable = <S extends Schema.Top>(schema: S) =>
  Schema.optional(Schema.NullOr(schema)).pipe(
    Schema.decodeTo(Schema.optional(Schema.toType(schema)), {
      decode: SchemaGetter.transformOptional((value) => Option.filter(value, Predicate.isNotNullish)),
      encode: SchemaGetter.passthrough({ strict: false })
    })
  )

/** Absent, undefined or null: the field is `value`. */
export const nullableOr = <S extends Schema.Top>(schema: S, value: S["Type"]) =>
  Schema.optional(Schema.NullOr(schema)).pipe(
    Schema.decodeTo(Schema.toType(schema), {
      decode: SchemaGetter.transformOptional((given) =>
        Option.orElseSome(Option.filter(given, Predicate.isNotNullish), () => value)
      ),
      encode: SchemaGetter.passthrough({ strict: false })
    })
  )
