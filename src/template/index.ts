/**
 * Template folders: validate, load, answer, render, generate, test-generate, lint; the lock file of a generated project.
 */
export { formatValidationError } from '../core/validation.js';
export {
  validateTemplate,
  REQUIRED_FILES,
  MANIFEST_FILE,
  VARIABLES_FILE,
  PROMPTS_FILE,
  type TemplateValidationError,
  type TemplateValidationResult,
  type ValidateOptions,
} from './validate.js';
export { STANDARD_VARIABLES, STANDARD_COMPUTED, implicitComputed, type StandardShape } from './standard-variables.js';
export {
  loadTemplate,
  TemplateLoadError,
  DEFAULT_CONTENT_FOLDER,
  type LoadedTemplate,
  type VariableDefinition,
  type PromptDefinition,
} from './load.js';
export {
  resolveAnswers,
  parseSetArguments,
  AnswersError,
  type Answers,
  type AnswerProblem,
  type ResolvedAnswers,
  type ResolveOptions,
} from './answers.js';
export {
  createEngine,
  ExpressionEvaluator,
  ExpressionError,
  DEFAULT_RENDER_LIMITS,
  type RenderLimits,
  type WhitespaceMode,
} from './expression.js';
export { templateFilters, packageName, className, kebabCase, camelCase, pascalCase, snakeCase } from './filters.js';
export { renderTemplate, RenderError, isBinary, type RenderedFile, type RenderOptions } from './render.js';
export { BINARY_HEAD_BYTES } from './text-files.js';
export { readTemplateTree, TemplateTree, type TreeEntry, type TreeProblem, type JsonRead } from './tree.js';
export { generateProject, OutputNotEmptyError, type GenerateOptions, type GenerateResult } from './generate.js';
export { LOCK_FILE, readLock, registrySource, sourceRegistry, lockSkipGlobs, skipGlobProblem, type TemplateLock, type LockedFile, type LockedSigner } from './lock.js';
export {
  testTemplate,
  buildAnswerMatrix,
  type AnswerSet,
  type AnswerMatrix,
  type AnswerSetReport,
  type TestTemplateReport,
  type TestTemplateOptions,
  type PackedFiles,
  type CommandOutcome,
} from './test-template.js';
export {
  lintTemplate,
  formatLintFinding,
  changelogHasVersion,
  LINT_RULES,
  type LintFinding,
  type LintResult,
  type LintSeverity,
} from './lint.js';
export { promptForAnswers, defaultPrompter, PromptCancelledError, type Prompter } from './prompts.js';
export { extractChangelogSection, requireChangelogSection, missingEntryNotes, ChangelogSectionMissingError } from '../core/changelog.js';
export {
  scaffoldTemplate,
  scaffoldFiles,
  scaffoldProblems,
  scaffoldFieldProblem,
  ScaffoldError,
  ScaffoldTargetNotEmptyError,
  TEMPLATE_CATEGORIES,
  FIRST_VERSION,
  PUBLISH_ACTION,
  type ScaffoldValues,
  type ScaffoldOptions,
  type ScaffoldResult,
  type ScaffoldProblem,
} from './scaffold.js';
export { renderNextSteps, cleanMessage, NextStepsError, NEXT_STEPS_MAX_CHARS, NEXT_STEPS_MAX_OUTPUT_CHARS, type GeneratedValues } from './next-steps.js';
export { writeFolderAtomically, FolderNotEmptyError, FolderConflictError, type FolderFile } from './write-folder.js';
export { secretVariables, secretNames, withoutSecrets, secretValues, maskSecrets, SECRET_MASK } from './secrets.js';
export {
  plannedTasks,
  runTask,
  runTasks,
  skippedTasks,
  recordTasks,
  taskCommandLine,
  DEFAULT_TASK_TIMEOUT_MS,
  TASK_INTERRUPTED,
  type TemplateTask,
  type PlannedTask,
  type TaskOutcome,
  type TaskStatus,
  type RunTasksOptions,
} from './tasks.js';
export { PatternFeatureError } from './pattern-syntax.js';
