/**
 * Workflows on a generated project: create one from a registry template, migrate one to a newer
 * version. The CLI's `create` and `migrate` only parse their flags, call these and print.
 */
export { createProject, projectNameFromFolder, type CreateProjectOptions, type CreateProjectResult } from './create.js';
export { migrateProject, type MigrateProjectOptions, type MigrateProjectResult, type MigrationPlan } from './migrate.js';
export { givenAnswers, readAnswersFile, AnswersFileError, type GivenAnswers } from './answers.js';
export { TemplateNotFoundError, ProjectLockError } from './errors.js';
export { fetchTemplateQuestions, questionsOf, type TemplateQuestion, type TemplateQuestions, type UnaskedVariable, type FetchQuestionsOptions } from './questions.js';
export { updateProject, missingBaseWarning, type UpdateProjectOptions, type UpdateProjectResult, type UpdatePlan, type PlannedStep, type BreakingChanges } from './update.js';
export { checkForUpdate, type CheckUpdateOptions, type UpdateCheck, type ChangelogEntry } from './check-update.js';
