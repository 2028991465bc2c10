export declare const ALL_ENGINES: readonly ['pglite', 'postgres']
export declare function selectedEngines(env?: NodeJS.ProcessEnv): Array<'pglite' | 'postgres'>
