// Testprog is a rank for narmarun's tests. It joins its job's bootstrap,
// does two rounds of exchanges checking that it received every rank's
// blob, prints "rank R of N: ok" and exits with status 0; on any error it
// prints the error and exits with status 1.
//
// With -fail-rank R, rank R exits with status 3 after the first round
// instead, leaving the others in the second; with -fail-at dial as well,
// it exits before it even dials, leaving the others in the first. With
// -fail-at end, every rank keeps its connection open after the rounds
// (Watch, as a rank that joined does), rank R exits with status 3 and the
// others exit with status 1 a moment later, as ranks that lost it would.
package main
