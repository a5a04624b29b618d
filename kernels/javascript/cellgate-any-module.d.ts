// cellgate-tslab.js gives the program that converts JavaScript cells this file and no
// types (no lib, no @types): any module a cell requires is one of `any`, so its bindings
// stay the cell's own exports in later cells, as with its real types.
declare module "*";
