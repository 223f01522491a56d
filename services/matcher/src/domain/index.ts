// The matcher's pure core: recipes, scores, versions and match identity. No I/O.
export { canonicalJson } from "./canonical-json.ts";
export {
  type CompiledRecipe,
  compileRecipe,
  evaluateRecipe,
  type FailedFilter,
  type FilterName,
  type RecipeEvaluation,
  type RuleName,
  saleAgeYears,
} from "./evaluate.ts";
export { buildMatchFound, matchIdFor } from "./match-event.ts";
export { matchId } from "./match-id.ts";
export {
  compilePredicate,
  type ParcelFacts,
  type Predicate,
  parcelFacts,
  signalBit,
  UnjudgeableParcelError,
} from "./predicate.ts";
export {
  type NormalizedRecipe,
  normalizeCity,
  normalizeRecipe,
  recipeFingerprint,
} from "./recipe.ts";
export {
  compileVersions,
  type IndexedVersion,
  indexKeyOf,
  RecipeIndex,
  type VersionInput,
} from "./recipe-index.ts";
export {
  roundScore,
  SCORE_DECIMALS,
  type ScoreResult,
  type SignalContribution,
  scoreSignals,
} from "./score.ts";
export {
  nextRecipeVersion,
  type RecipeChange,
  type RecipeVersion,
  recipeVersionInForce,
} from "./versions.ts";
