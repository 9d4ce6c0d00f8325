import { PUBLISH_STEP_TITLES, type PublishHooks } from './pipeline.js';

/**
 * Hooks that print the pipeline's progress as plain lines, for a terminal or a log: each finding
 * (`file:line:col severity rule message`, or the validation line), the result of each step, and
 * upload retries. The failure itself is left to the caller (the error is thrown).
 */
export function publishProgressPrinter(write: (line: string) => void): PublishHooks {
  return {
    onFinding: (finding) => write(finding.text),
    onInfo: (_step, message) => write(`  ${message}`),
    onStepFinished: (step, result) => write(`${PUBLISH_STEP_TITLES[step]}: ${result}`),
    onStepSkipped: (step, reason) => write(`${PUBLISH_STEP_TITLES[step]}: skipped (${reason})`),
    onRetry: ({ attempt, delayMs, reason }) => write(`attempt ${attempt} failed (${reason}); retrying in ${(delayMs / 1000).toFixed(1)} s`),
  };
}
