export const CONSOLE_SCRIPT_BUDGET: number
export function consoleScriptBytes(folder: string): number
export function buildConsole(outDir?: string): Promise<{ outDir: string; bytes: number }>
