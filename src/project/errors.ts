/** The registry has no such template, or not that version of it. */
export class TemplateNotFoundError extends Error {
  constructor(
    readonly templateId: string,
    readonly version?: string,
  ) {
    super(`template ${templateId}${version === undefined ? '' : `@${version}`} not found in the registry`);
    this.name = 'TemplateNotFoundError';
  }
}

/** The project's lock file cannot be read: the folder was not generated, or the file is damaged. */
export class ProjectLockError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ProjectLockError';
  }
}
