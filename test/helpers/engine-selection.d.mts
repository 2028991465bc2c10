export declare const ALL_ENGINES: readonly ['pglite', 'postgres']
export declare function selectedEngines(env?: NodeJS.ProcessEnv): Array<'pglite' | 'postgres'>
export declare const LEFT_OUT: 'PostgreSQL left out of this run by TEST_ENGINES'
