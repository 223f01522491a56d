import { describe, expect, it } from "vitest";
import { duplicateMember } from "./json-members.ts";

describe("duplicateMember: a JSON object that names a member twice", () => {
  it("finds a repeated member at the top level and names it", () => {
    expect(duplicateMember('{"tier":"starter","company":"A","tier":"custom"}')).toEqual(["tier"]);
  });

  it("finds it however deep, with the path to it", () => {
    expect(duplicateMember('{"a":[{"x":1},{"x":1,"y":{"z":1,"z":2}}]}')).toEqual([
      "a",
      "1",
      "y",
      "z",
    ]);
  });

  it("reads escaped names as JSON does", () => {
    expect(duplicateMember('{"tier":1,"\\u0074ier":2}')).toEqual(["tier"]);
  });

  it("passes the same name in sibling objects, names inside string values, and arrays", () => {
    expect(duplicateMember('[{"a":1},{"a":2}]')).toBeNull();
    expect(duplicateMember('{"a":"b\\",\\"a\\":1","b":{"a":1}}')).toBeNull();
    expect(duplicateMember('{"folios":["a","a"],"b":":"}')).toBeNull();
    expect(duplicateMember('{"a":1}')).toBeNull();
  });

  it("leaves malformed text to the parser", () => {
    expect(duplicateMember('{"a":1,"a')).toBeNull();
    expect(duplicateMember('{"\\x":1,"\\x":2}')).toBeNull();
  });
});
