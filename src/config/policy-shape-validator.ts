// @ts-nocheck
// Generated from policyFileSchema (src/config/policy-schema.ts) by ajv's standalone code: do not
// edit; run `npx tsx scripts/policy-validator.ts` after changing the schema. It imports nothing at run
// time, so that the library (policies.ts) does not carry ajv (3 MB, 5 packages).
import type { SchemaError } from './document-order.js';

/** True when `document` has the shape of a policy file; if not, `errors` lists every fault (as ajv words them). */
export interface PolicyShapeValidator {
  (document: unknown): boolean;
  errors?: SchemaError[] | null;
}

export const validatePolicyShape: PolicyShapeValidator = validate10;

const schema11 = {"$schema":"http://json-schema.org/draft-07/schema#","title":"memgate policy file","type":"object","additionalProperties":false,"required":["events"],"properties":{"gateway":{"type":"object","additionalProperties":false,"properties":{"feature":{"type":"string","description":"client-ip, or header:<name>"},"ipv6Subnet":{"description":"the prefix an IPv6 client-ip is counted by, in bits (default 56); false counts each address alone","type":["integer","boolean"],"minimum":1,"maximum":128},"trustedProxies":{"description":"a hop count, or the addresses and CIDR ranges of the proxies (loopback, linklocal, uniquelocal)","type":["integer","array"],"minimum":0,"maximum":16,"maxItems":64,"items":{"type":"string","maxLength":64}},"uri":{"type":"string","description":"path, or header:<name>"},"event":{"type":"string","description":"routes, or header:<name>"},"pathCase":{"enum":["insensitive","sensitive"]},"unmatched":{"type":"string","description":"allow, deny, or an event"},"denyStatus":{"enum":[429,403]},"invalidStatus":{"enum":[400,401]},"tier":{"type":"string","description":"header:<name>: the header the gateway sets with the client's tier"},"allow":{"type":"array","maxItems":10000,"items":{"type":"object","description":"{ feature: NAME }, { prefix: TEXT } or { cidr: NETWORK }"}},"deny":{"type":"array","maxItems":10000,"items":{"type":"object","description":"{ feature: NAME }, { prefix: TEXT } or { cidr: NETWORK }"}},"routes":{"type":"array","maxItems":1000,"items":{"type":"object","additionalProperties":false,"required":["prefix","event"],"properties":{"prefix":{"type":"string","pattern":"^/[^\\s?#]*$","maxLength":1024},"event":{"type":"string"}}}}}},"events":{"type":"object","minProperties":1,"propertyNames":{"pattern":"^[A-Za-z0-9_.-]{1,64}$"},"additionalProperties":{"type":"object","additionalProperties":false,"required":["limits"],"properties":{"algorithm":{"enum":["sliding","fixed","token-bucket","concurrency"]},"edge":{"enum":["whole","drop","weighted"]},"onStoreError":{"enum":["allow","deny"]},"mode":{"enum":["enforce","shadow"]},"lease":{"type":"object","additionalProperties":false,"description":"lets clients take quota leases for this event","properties":{"maxUnits":{"type":"integer","minimum":1,"maximum":1000000000000},"life":{"description":"Ns, Nm, Nh, Nd or a number of seconds","type":["string","integer"]}}},"reservations":{"type":"object","additionalProperties":false,"description":"lets checks reserve a cost (reserve: N) and settle it later with the actual cost","properties":{"life":{"description":"Ns, Nm, Nh, Nd or a number of seconds","type":["string","integer"]}}},"limits":{"type":"array","minItems":1,"maxItems":16,"items":{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string","pattern":"^[A-Za-z0-9_.-]{1,64}$"},"limit":{"type":"integer","minimum":1,"maximum":1000000000000},"window":{"description":"Ns, Nm, Nh, Nd, a number of seconds, or for a fixed window 1w or 1mo","type":["string","integer"]},"granularity":{"description":"Ns, Nm, Nh, Nd or a number of seconds","type":["string","integer"]},"anchor":{"type":["integer","string"],"description":"where a calendar window starts: a 1mo window's day of the month (1-28), a 1w window's weekday"},"timezone":{"type":"string","maxLength":64,"description":"the IANA time zone of a calendar window (default UTC)"},"rate":{"type":"string","description":"a token bucket's tokens per period: 10/s, 600/1m"},"burst":{"type":"integer","minimum":1,"maximum":1000000000000,"description":"a token bucket's most tokens at once"},"timeout":{"description":"a concurrency limit's: how long a request may hold its slot before it frees itself (default 60s)","type":["string","integer"]},"mode":{"enum":["enforce","shadow"]}}}},"tiers":{"type":"object","description":"named limit sets (free, pro, ...) a client is put in by an override or by its caller","maxProperties":32,"propertyNames":{"pattern":"^[A-Za-z0-9_.-]{1,64}$"},"additionalProperties":{"type":"object","additionalProperties":false,"required":["limits"],"properties":{"limits":{"type":"array","minItems":1,"maxItems":16,"items":{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string","pattern":"^[A-Za-z0-9_.-]{1,64}$"},"limit":{"type":"integer","minimum":1,"maximum":1000000000000},"window":{"description":"Ns, Nm, Nh, Nd, a number of seconds, or for a fixed window 1w or 1mo","type":["string","integer"]},"granularity":{"description":"Ns, Nm, Nh, Nd or a number of seconds","type":["string","integer"]},"anchor":{"type":["integer","string"],"description":"where a calendar window starts: a 1mo window's day of the month (1-28), a 1w window's weekday"},"timezone":{"type":"string","maxLength":64,"description":"the IANA time zone of a calendar window (default UTC)"},"rate":{"type":"string","description":"a token bucket's tokens per period: 10/s, 600/1m"},"burst":{"type":"integer","minimum":1,"maximum":1000000000000,"description":"a token bucket's most tokens at once"},"timeout":{"description":"a concurrency limit's: how long a request may hold its slot before it frees itself (default 60s)","type":["string","integer"]},"mode":{"enum":["enforce","shadow"]}}}}}}},"overrides":{"type":"array","description":"limits of their own for the clients each matches; the most specific match wins","maxItems":10000,"items":{"type":"object","additionalProperties":false,"required":["match"],"properties":{"match":{"type":"object","description":"{ feature: NAME }, { prefix: TEXT } or { cidr: NETWORK }"},"limits":{"type":"array","minItems":1,"maxItems":16,"items":{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string","pattern":"^[A-Za-z0-9_.-]{1,64}$"},"limit":{"type":"integer","minimum":1,"maximum":1000000000000},"window":{"description":"Ns, Nm, Nh, Nd, a number of seconds, or for a fixed window 1w or 1mo","type":["string","integer"]},"granularity":{"description":"Ns, Nm, Nh, Nd or a number of seconds","type":["string","integer"]},"anchor":{"type":["integer","string"],"description":"where a calendar window starts: a 1mo window's day of the month (1-28), a 1w window's weekday"},"timezone":{"type":"string","maxLength":64,"description":"the IANA time zone of a calendar window (default UTC)"},"rate":{"type":"string","description":"a token bucket's tokens per period: 10/s, 600/1m"},"burst":{"type":"integer","minimum":1,"maximum":1000000000000,"description":"a token bucket's most tokens at once"},"timeout":{"description":"a concurrency limit's: how long a request may hold its slot before it frees itself (default 60s)","type":["string","integer"]},"mode":{"enum":["enforce","shadow"]}}}},"tier":{"type":"string","pattern":"^[A-Za-z0-9_.-]{1,64}$"},"until":{"type":"string","description":"an ISO 8601 time with its zone, after which the override lapses"}}}},"allow":{"type":"array","maxItems":10000,"items":{"type":"object","description":"{ feature: NAME }, { prefix: TEXT } or { cidr: NETWORK }"}},"deny":{"type":"array","maxItems":10000,"items":{"type":"object","description":"{ feature: NAME }, { prefix: TEXT } or { cidr: NETWORK }"}}}}}}};
const func2 = Object.prototype.hasOwnProperty;
const func3 = /* ajv/dist/runtime/ucs2length, inlined: this file imports nothing at run time */ function ucs2length(str) {
    const len = str.length;
    let length = 0;
    let pos = 0;
    let value;
    while (pos < len) {
        length++;
        value = str.charCodeAt(pos++);
        if (value >= 0xd800 && value <= 0xdbff && pos < len) {
            // high surrogate, and there is a next character
            value = str.charCodeAt(pos);
            if ((value & 0xfc00) === 0xdc00)
                pos++; // low surrogate
        }
    }
    return length;
};
const pattern0 = new RegExp("^/[^\\s?#]*$", "u");
const pattern1 = new RegExp("^[A-Za-z0-9_.-]{1,64}$", "u");

function validate10(data, {instancePath="", parentData, parentDataProperty, rootData=data}={}){
let vErrors = null;
let errors = 0;
const _errs0 = errors;
if(data && typeof data == "object" && !Array.isArray(data)){
if(data.events === undefined){
const err0 = {instancePath,schemaPath:"#/required",keyword:"required",params:{missingProperty: "events"},message:"must have required property '"+"events"+"'"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
const _errs1 = errors;
for(const key0 in data){
if(!((key0 === "gateway") || (key0 === "events"))){
const err1 = {instancePath,schemaPath:"#/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key0},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
if(data.gateway !== undefined){
let data0 = data.gateway;
const _errs2 = errors;
const _errs3 = errors;
if(data0 && typeof data0 == "object" && !Array.isArray(data0)){
const _errs4 = errors;
for(const key1 in data0){
if(!(func2.call(schema11.properties.gateway.properties, key1))){
const err2 = {instancePath:instancePath+"/gateway",schemaPath:"#/properties/gateway/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key1},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
}
if(data0.feature !== undefined){
let data1 = data0.feature;
const _errs5 = errors;
if(typeof data1 !== "string"){
const err3 = {instancePath:instancePath+"/gateway/feature",schemaPath:"#/properties/gateway/properties/feature/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
}
const _errs6 = errors;
var valid1 = _errs5 === errors;
}
if(data0.ipv6Subnet !== undefined){
let data2 = data0.ipv6Subnet;
const _errs7 = errors;
if((!(((typeof data2 == "number") && (!(data2 % 1) && !isNaN(data2))) && (isFinite(data2)))) && (typeof data2 !== "boolean")){
const err4 = {instancePath:instancePath+"/gateway/ipv6Subnet",schemaPath:"#/properties/gateway/properties/ipv6Subnet/type",keyword:"type",params:{type: schema11.properties.gateway.properties.ipv6Subnet.type},message:"must be integer,boolean"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
const _errs8 = errors;
if((typeof data2 == "number") && (isFinite(data2))){
if(data2 > 128 || isNaN(data2)){
const err5 = {instancePath:instancePath+"/gateway/ipv6Subnet",schemaPath:"#/properties/gateway/properties/ipv6Subnet/maximum",keyword:"maximum",params:{comparison: "<=", limit: 128},message:"must be <= 128"};
if(vErrors === null){
vErrors = [err5];
}
else {
vErrors.push(err5);
}
errors++;
}
if(data2 < 1 || isNaN(data2)){
const err6 = {instancePath:instancePath+"/gateway/ipv6Subnet",schemaPath:"#/properties/gateway/properties/ipv6Subnet/minimum",keyword:"minimum",params:{comparison: ">=", limit: 1},message:"must be >= 1"};
if(vErrors === null){
vErrors = [err6];
}
else {
vErrors.push(err6);
}
errors++;
}
}
var valid1 = _errs7 === errors;
}
if(data0.trustedProxies !== undefined){
let data3 = data0.trustedProxies;
const _errs9 = errors;
if((!(((typeof data3 == "number") && (!(data3 % 1) && !isNaN(data3))) && (isFinite(data3)))) && (!(Array.isArray(data3)))){
const err7 = {instancePath:instancePath+"/gateway/trustedProxies",schemaPath:"#/properties/gateway/properties/trustedProxies/type",keyword:"type",params:{type: schema11.properties.gateway.properties.trustedProxies.type},message:"must be integer,array"};
if(vErrors === null){
vErrors = [err7];
}
else {
vErrors.push(err7);
}
errors++;
}
const _errs10 = errors;
if((typeof data3 == "number") && (isFinite(data3))){
if(data3 > 16 || isNaN(data3)){
const err8 = {instancePath:instancePath+"/gateway/trustedProxies",schemaPath:"#/properties/gateway/properties/trustedProxies/maximum",keyword:"maximum",params:{comparison: "<=", limit: 16},message:"must be <= 16"};
if(vErrors === null){
vErrors = [err8];
}
else {
vErrors.push(err8);
}
errors++;
}
if(data3 < 0 || isNaN(data3)){
const err9 = {instancePath:instancePath+"/gateway/trustedProxies",schemaPath:"#/properties/gateway/properties/trustedProxies/minimum",keyword:"minimum",params:{comparison: ">=", limit: 0},message:"must be >= 0"};
if(vErrors === null){
vErrors = [err9];
}
else {
vErrors.push(err9);
}
errors++;
}
}
if(Array.isArray(data3)){
if(data3.length > 64){
const err10 = {instancePath:instancePath+"/gateway/trustedProxies",schemaPath:"#/properties/gateway/properties/trustedProxies/maxItems",keyword:"maxItems",params:{limit: 64},message:"must NOT have more than 64 items"};
if(vErrors === null){
vErrors = [err10];
}
else {
vErrors.push(err10);
}
errors++;
}
let valid3 = true;
const len0 = data3.length;
for(let i0=0; i0<len0; i0++){
let data4 = data3[i0];
const _errs11 = errors;
const _errs12 = errors;
if(typeof data4 === "string"){
if(func3(data4) > 64){
const err11 = {instancePath:instancePath+"/gateway/trustedProxies/" + i0,schemaPath:"#/properties/gateway/properties/trustedProxies/items/maxLength",keyword:"maxLength",params:{limit: 64},message:"must NOT have more than 64 characters"};
if(vErrors === null){
vErrors = [err11];
}
else {
vErrors.push(err11);
}
errors++;
}
}
else {
const err12 = {instancePath:instancePath+"/gateway/trustedProxies/" + i0,schemaPath:"#/properties/gateway/properties/trustedProxies/items/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err12];
}
else {
vErrors.push(err12);
}
errors++;
}
var valid2 = _errs11 === errors;
if(!valid2){
valid3 = false;
}
}
}
var valid1 = _errs9 === errors;
}
if(data0.uri !== undefined){
let data5 = data0.uri;
const _errs13 = errors;
if(typeof data5 !== "string"){
const err13 = {instancePath:instancePath+"/gateway/uri",schemaPath:"#/properties/gateway/properties/uri/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err13];
}
else {
vErrors.push(err13);
}
errors++;
}
const _errs14 = errors;
var valid1 = _errs13 === errors;
}
if(data0.event !== undefined){
let data6 = data0.event;
const _errs15 = errors;
if(typeof data6 !== "string"){
const err14 = {instancePath:instancePath+"/gateway/event",schemaPath:"#/properties/gateway/properties/event/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err14];
}
else {
vErrors.push(err14);
}
errors++;
}
const _errs16 = errors;
var valid1 = _errs15 === errors;
}
if(data0.pathCase !== undefined){
let data7 = data0.pathCase;
const _errs17 = errors;
const vSchema0 = schema11.properties.gateway.properties.pathCase.enum;
if(!((data7 === "insensitive") || (data7 === "sensitive"))){
const err15 = {instancePath:instancePath+"/gateway/pathCase",schemaPath:"#/properties/gateway/properties/pathCase/enum",keyword:"enum",params:{allowedValues: schema11.properties.gateway.properties.pathCase.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err15];
}
else {
vErrors.push(err15);
}
errors++;
}
var valid1 = _errs17 === errors;
}
if(data0.unmatched !== undefined){
let data8 = data0.unmatched;
const _errs18 = errors;
if(typeof data8 !== "string"){
const err16 = {instancePath:instancePath+"/gateway/unmatched",schemaPath:"#/properties/gateway/properties/unmatched/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err16];
}
else {
vErrors.push(err16);
}
errors++;
}
const _errs19 = errors;
var valid1 = _errs18 === errors;
}
if(data0.denyStatus !== undefined){
let data9 = data0.denyStatus;
const _errs20 = errors;
const vSchema1 = schema11.properties.gateway.properties.denyStatus.enum;
if(!((data9 === 429) || (data9 === 403))){
const err17 = {instancePath:instancePath+"/gateway/denyStatus",schemaPath:"#/properties/gateway/properties/denyStatus/enum",keyword:"enum",params:{allowedValues: schema11.properties.gateway.properties.denyStatus.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err17];
}
else {
vErrors.push(err17);
}
errors++;
}
var valid1 = _errs20 === errors;
}
if(data0.invalidStatus !== undefined){
let data10 = data0.invalidStatus;
const _errs21 = errors;
const vSchema2 = schema11.properties.gateway.properties.invalidStatus.enum;
if(!((data10 === 400) || (data10 === 401))){
const err18 = {instancePath:instancePath+"/gateway/invalidStatus",schemaPath:"#/properties/gateway/properties/invalidStatus/enum",keyword:"enum",params:{allowedValues: schema11.properties.gateway.properties.invalidStatus.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err18];
}
else {
vErrors.push(err18);
}
errors++;
}
var valid1 = _errs21 === errors;
}
if(data0.tier !== undefined){
let data11 = data0.tier;
const _errs22 = errors;
if(typeof data11 !== "string"){
const err19 = {instancePath:instancePath+"/gateway/tier",schemaPath:"#/properties/gateway/properties/tier/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err19];
}
else {
vErrors.push(err19);
}
errors++;
}
const _errs23 = errors;
var valid1 = _errs22 === errors;
}
if(data0.allow !== undefined){
let data12 = data0.allow;
const _errs24 = errors;
const _errs25 = errors;
if(Array.isArray(data12)){
if(data12.length > 10000){
const err20 = {instancePath:instancePath+"/gateway/allow",schemaPath:"#/properties/gateway/properties/allow/maxItems",keyword:"maxItems",params:{limit: 10000},message:"must NOT have more than 10000 items"};
if(vErrors === null){
vErrors = [err20];
}
else {
vErrors.push(err20);
}
errors++;
}
let valid5 = true;
const len1 = data12.length;
for(let i1=0; i1<len1; i1++){
let data13 = data12[i1];
const _errs26 = errors;
if(!(data13 && typeof data13 == "object" && !Array.isArray(data13))){
const err21 = {instancePath:instancePath+"/gateway/allow/" + i1,schemaPath:"#/properties/gateway/properties/allow/items/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err21];
}
else {
vErrors.push(err21);
}
errors++;
}
const _errs27 = errors;
var valid4 = _errs26 === errors;
if(!valid4){
valid5 = false;
}
}
}
else {
const err22 = {instancePath:instancePath+"/gateway/allow",schemaPath:"#/properties/gateway/properties/allow/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err22];
}
else {
vErrors.push(err22);
}
errors++;
}
var valid1 = _errs24 === errors;
}
if(data0.deny !== undefined){
let data14 = data0.deny;
const _errs28 = errors;
const _errs29 = errors;
if(Array.isArray(data14)){
if(data14.length > 10000){
const err23 = {instancePath:instancePath+"/gateway/deny",schemaPath:"#/properties/gateway/properties/deny/maxItems",keyword:"maxItems",params:{limit: 10000},message:"must NOT have more than 10000 items"};
if(vErrors === null){
vErrors = [err23];
}
else {
vErrors.push(err23);
}
errors++;
}
let valid7 = true;
const len2 = data14.length;
for(let i2=0; i2<len2; i2++){
let data15 = data14[i2];
const _errs30 = errors;
if(!(data15 && typeof data15 == "object" && !Array.isArray(data15))){
const err24 = {instancePath:instancePath+"/gateway/deny/" + i2,schemaPath:"#/properties/gateway/properties/deny/items/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err24];
}
else {
vErrors.push(err24);
}
errors++;
}
const _errs31 = errors;
var valid6 = _errs30 === errors;
if(!valid6){
valid7 = false;
}
}
}
else {
const err25 = {instancePath:instancePath+"/gateway/deny",schemaPath:"#/properties/gateway/properties/deny/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err25];
}
else {
vErrors.push(err25);
}
errors++;
}
var valid1 = _errs28 === errors;
}
if(data0.routes !== undefined){
let data16 = data0.routes;
const _errs32 = errors;
const _errs33 = errors;
if(Array.isArray(data16)){
if(data16.length > 1000){
const err26 = {instancePath:instancePath+"/gateway/routes",schemaPath:"#/properties/gateway/properties/routes/maxItems",keyword:"maxItems",params:{limit: 1000},message:"must NOT have more than 1000 items"};
if(vErrors === null){
vErrors = [err26];
}
else {
vErrors.push(err26);
}
errors++;
}
let valid9 = true;
const len3 = data16.length;
for(let i3=0; i3<len3; i3++){
let data17 = data16[i3];
const _errs34 = errors;
const _errs35 = errors;
if(data17 && typeof data17 == "object" && !Array.isArray(data17)){
if(data17.prefix === undefined){
const err27 = {instancePath:instancePath+"/gateway/routes/" + i3,schemaPath:"#/properties/gateway/properties/routes/items/required",keyword:"required",params:{missingProperty: "prefix"},message:"must have required property '"+"prefix"+"'"};
if(vErrors === null){
vErrors = [err27];
}
else {
vErrors.push(err27);
}
errors++;
}
if(data17.event === undefined){
const err28 = {instancePath:instancePath+"/gateway/routes/" + i3,schemaPath:"#/properties/gateway/properties/routes/items/required",keyword:"required",params:{missingProperty: "event"},message:"must have required property '"+"event"+"'"};
if(vErrors === null){
vErrors = [err28];
}
else {
vErrors.push(err28);
}
errors++;
}
const _errs36 = errors;
for(const key2 in data17){
if(!((key2 === "prefix") || (key2 === "event"))){
const err29 = {instancePath:instancePath+"/gateway/routes/" + i3,schemaPath:"#/properties/gateway/properties/routes/items/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key2},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err29];
}
else {
vErrors.push(err29);
}
errors++;
}
}
if(data17.prefix !== undefined){
let data18 = data17.prefix;
const _errs37 = errors;
const _errs38 = errors;
if(typeof data18 === "string"){
if(func3(data18) > 1024){
const err30 = {instancePath:instancePath+"/gateway/routes/" + i3+"/prefix",schemaPath:"#/properties/gateway/properties/routes/items/properties/prefix/maxLength",keyword:"maxLength",params:{limit: 1024},message:"must NOT have more than 1024 characters"};
if(vErrors === null){
vErrors = [err30];
}
else {
vErrors.push(err30);
}
errors++;
}
if(!pattern0.test(data18)){
const err31 = {instancePath:instancePath+"/gateway/routes/" + i3+"/prefix",schemaPath:"#/properties/gateway/properties/routes/items/properties/prefix/pattern",keyword:"pattern",params:{pattern: "^/[^\\s?#]*$"},message:"must match pattern \""+"^/[^\\s?#]*$"+"\""};
if(vErrors === null){
vErrors = [err31];
}
else {
vErrors.push(err31);
}
errors++;
}
}
else {
const err32 = {instancePath:instancePath+"/gateway/routes/" + i3+"/prefix",schemaPath:"#/properties/gateway/properties/routes/items/properties/prefix/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err32];
}
else {
vErrors.push(err32);
}
errors++;
}
var valid10 = _errs37 === errors;
}
if(data17.event !== undefined){
let data19 = data17.event;
const _errs39 = errors;
if(typeof data19 !== "string"){
const err33 = {instancePath:instancePath+"/gateway/routes/" + i3+"/event",schemaPath:"#/properties/gateway/properties/routes/items/properties/event/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err33];
}
else {
vErrors.push(err33);
}
errors++;
}
const _errs40 = errors;
var valid10 = _errs39 === errors;
}
}
else {
const err34 = {instancePath:instancePath+"/gateway/routes/" + i3,schemaPath:"#/properties/gateway/properties/routes/items/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err34];
}
else {
vErrors.push(err34);
}
errors++;
}
var valid8 = _errs34 === errors;
if(!valid8){
valid9 = false;
}
}
}
else {
const err35 = {instancePath:instancePath+"/gateway/routes",schemaPath:"#/properties/gateway/properties/routes/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err35];
}
else {
vErrors.push(err35);
}
errors++;
}
var valid1 = _errs32 === errors;
}
}
else {
const err36 = {instancePath:instancePath+"/gateway",schemaPath:"#/properties/gateway/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err36];
}
else {
vErrors.push(err36);
}
errors++;
}
var valid0 = _errs2 === errors;
}
if(data.events !== undefined){
let data20 = data.events;
const _errs41 = errors;
const _errs42 = errors;
if(data20 && typeof data20 == "object" && !Array.isArray(data20)){
if(Object.keys(data20).length < 1){
const err37 = {instancePath:instancePath+"/events",schemaPath:"#/properties/events/minProperties",keyword:"minProperties",params:{limit: 1},message:"must NOT have fewer than 1 properties"};
if(vErrors === null){
vErrors = [err37];
}
else {
vErrors.push(err37);
}
errors++;
}
for(const key3 in data20){
const _errs43 = errors;
if(typeof key3 === "string"){
if(!pattern1.test(key3)){
const err38 = {instancePath:instancePath+"/events",schemaPath:"#/properties/events/propertyNames/pattern",keyword:"pattern",params:{pattern: "^[A-Za-z0-9_.-]{1,64}$"},message:"must match pattern \""+"^[A-Za-z0-9_.-]{1,64}$"+"\"",propertyName:key3};
if(vErrors === null){
vErrors = [err38];
}
else {
vErrors.push(err38);
}
errors++;
}
}
var valid11 = _errs43 === errors;
if(!valid11){
const err39 = {instancePath:instancePath+"/events",schemaPath:"#/properties/events/propertyNames",keyword:"propertyNames",params:{propertyName: key3},message:"property name must be valid"};
if(vErrors === null){
vErrors = [err39];
}
else {
vErrors.push(err39);
}
errors++;
}
}
const _errs44 = errors;
for(const key4 in data20){
let data21 = data20[key4];
const _errs45 = errors;
const _errs46 = errors;
if(data21 && typeof data21 == "object" && !Array.isArray(data21)){
if(data21.limits === undefined){
const err40 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1"),schemaPath:"#/properties/events/additionalProperties/required",keyword:"required",params:{missingProperty: "limits"},message:"must have required property '"+"limits"+"'"};
if(vErrors === null){
vErrors = [err40];
}
else {
vErrors.push(err40);
}
errors++;
}
const _errs47 = errors;
for(const key5 in data21){
if(!(func2.call(schema11.properties.events.additionalProperties.properties, key5))){
const err41 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1"),schemaPath:"#/properties/events/additionalProperties/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key5},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err41];
}
else {
vErrors.push(err41);
}
errors++;
}
}
if(data21.algorithm !== undefined){
let data22 = data21.algorithm;
const _errs48 = errors;
const vSchema3 = schema11.properties.events.additionalProperties.properties.algorithm.enum;
if(!((((data22 === "sliding") || (data22 === "fixed")) || (data22 === "token-bucket")) || (data22 === "concurrency"))){
const err42 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/algorithm",schemaPath:"#/properties/events/additionalProperties/properties/algorithm/enum",keyword:"enum",params:{allowedValues: schema11.properties.events.additionalProperties.properties.algorithm.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err42];
}
else {
vErrors.push(err42);
}
errors++;
}
var valid13 = _errs48 === errors;
}
if(data21.edge !== undefined){
let data23 = data21.edge;
const _errs49 = errors;
const vSchema4 = schema11.properties.events.additionalProperties.properties.edge.enum;
if(!(((data23 === "whole") || (data23 === "drop")) || (data23 === "weighted"))){
const err43 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/edge",schemaPath:"#/properties/events/additionalProperties/properties/edge/enum",keyword:"enum",params:{allowedValues: schema11.properties.events.additionalProperties.properties.edge.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err43];
}
else {
vErrors.push(err43);
}
errors++;
}
var valid13 = _errs49 === errors;
}
if(data21.onStoreError !== undefined){
let data24 = data21.onStoreError;
const _errs50 = errors;
const vSchema5 = schema11.properties.events.additionalProperties.properties.onStoreError.enum;
if(!((data24 === "allow") || (data24 === "deny"))){
const err44 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/onStoreError",schemaPath:"#/properties/events/additionalProperties/properties/onStoreError/enum",keyword:"enum",params:{allowedValues: schema11.properties.events.additionalProperties.properties.onStoreError.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err44];
}
else {
vErrors.push(err44);
}
errors++;
}
var valid13 = _errs50 === errors;
}
if(data21.mode !== undefined){
let data25 = data21.mode;
const _errs51 = errors;
const vSchema6 = schema11.properties.events.additionalProperties.properties.mode.enum;
if(!((data25 === "enforce") || (data25 === "shadow"))){
const err45 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/mode",schemaPath:"#/properties/events/additionalProperties/properties/mode/enum",keyword:"enum",params:{allowedValues: schema11.properties.events.additionalProperties.properties.mode.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err45];
}
else {
vErrors.push(err45);
}
errors++;
}
var valid13 = _errs51 === errors;
}
if(data21.lease !== undefined){
let data26 = data21.lease;
const _errs52 = errors;
const _errs53 = errors;
if(data26 && typeof data26 == "object" && !Array.isArray(data26)){
const _errs54 = errors;
for(const key6 in data26){
if(!((key6 === "maxUnits") || (key6 === "life"))){
const err46 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/lease",schemaPath:"#/properties/events/additionalProperties/properties/lease/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key6},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err46];
}
else {
vErrors.push(err46);
}
errors++;
}
}
if(data26.maxUnits !== undefined){
let data27 = data26.maxUnits;
const _errs55 = errors;
if(!(((typeof data27 == "number") && (!(data27 % 1) && !isNaN(data27))) && (isFinite(data27)))){
const err47 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/lease/maxUnits",schemaPath:"#/properties/events/additionalProperties/properties/lease/properties/maxUnits/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err47];
}
else {
vErrors.push(err47);
}
errors++;
}
const _errs56 = errors;
if((typeof data27 == "number") && (isFinite(data27))){
if(data27 > 1000000000000 || isNaN(data27)){
const err48 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/lease/maxUnits",schemaPath:"#/properties/events/additionalProperties/properties/lease/properties/maxUnits/maximum",keyword:"maximum",params:{comparison: "<=", limit: 1000000000000},message:"must be <= 1000000000000"};
if(vErrors === null){
vErrors = [err48];
}
else {
vErrors.push(err48);
}
errors++;
}
if(data27 < 1 || isNaN(data27)){
const err49 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/lease/maxUnits",schemaPath:"#/properties/events/additionalProperties/properties/lease/properties/maxUnits/minimum",keyword:"minimum",params:{comparison: ">=", limit: 1},message:"must be >= 1"};
if(vErrors === null){
vErrors = [err49];
}
else {
vErrors.push(err49);
}
errors++;
}
}
var valid14 = _errs55 === errors;
}
if(data26.life !== undefined){
let data28 = data26.life;
const _errs57 = errors;
if((typeof data28 !== "string") && (!(((typeof data28 == "number") && (!(data28 % 1) && !isNaN(data28))) && (isFinite(data28))))){
const err50 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/lease/life",schemaPath:"#/properties/events/additionalProperties/properties/lease/properties/life/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.lease.properties.life.type},message:"must be string,integer"};
if(vErrors === null){
vErrors = [err50];
}
else {
vErrors.push(err50);
}
errors++;
}
const _errs58 = errors;
var valid14 = _errs57 === errors;
}
}
else {
const err51 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/lease",schemaPath:"#/properties/events/additionalProperties/properties/lease/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err51];
}
else {
vErrors.push(err51);
}
errors++;
}
var valid13 = _errs52 === errors;
}
if(data21.reservations !== undefined){
let data29 = data21.reservations;
const _errs59 = errors;
const _errs60 = errors;
if(data29 && typeof data29 == "object" && !Array.isArray(data29)){
const _errs61 = errors;
for(const key7 in data29){
if(!(key7 === "life")){
const err52 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/reservations",schemaPath:"#/properties/events/additionalProperties/properties/reservations/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key7},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err52];
}
else {
vErrors.push(err52);
}
errors++;
}
}
if(data29.life !== undefined){
let data30 = data29.life;
const _errs62 = errors;
if((typeof data30 !== "string") && (!(((typeof data30 == "number") && (!(data30 % 1) && !isNaN(data30))) && (isFinite(data30))))){
const err53 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/reservations/life",schemaPath:"#/properties/events/additionalProperties/properties/reservations/properties/life/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.reservations.properties.life.type},message:"must be string,integer"};
if(vErrors === null){
vErrors = [err53];
}
else {
vErrors.push(err53);
}
errors++;
}
const _errs63 = errors;
var valid15 = _errs62 === errors;
}
}
else {
const err54 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/reservations",schemaPath:"#/properties/events/additionalProperties/properties/reservations/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err54];
}
else {
vErrors.push(err54);
}
errors++;
}
var valid13 = _errs59 === errors;
}
if(data21.limits !== undefined){
let data31 = data21.limits;
const _errs64 = errors;
const _errs65 = errors;
if(Array.isArray(data31)){
if(data31.length > 16){
const err55 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits",schemaPath:"#/properties/events/additionalProperties/properties/limits/maxItems",keyword:"maxItems",params:{limit: 16},message:"must NOT have more than 16 items"};
if(vErrors === null){
vErrors = [err55];
}
else {
vErrors.push(err55);
}
errors++;
}
if(data31.length < 1){
const err56 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits",schemaPath:"#/properties/events/additionalProperties/properties/limits/minItems",keyword:"minItems",params:{limit: 1},message:"must NOT have fewer than 1 items"};
if(vErrors === null){
vErrors = [err56];
}
else {
vErrors.push(err56);
}
errors++;
}
let valid17 = true;
const len4 = data31.length;
for(let i4=0; i4<len4; i4++){
let data32 = data31[i4];
const _errs66 = errors;
const _errs67 = errors;
if(data32 && typeof data32 == "object" && !Array.isArray(data32)){
const _errs68 = errors;
for(const key8 in data32){
if(!(func2.call(schema11.properties.events.additionalProperties.properties.limits.items.properties, key8))){
const err57 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4,schemaPath:"#/properties/events/additionalProperties/properties/limits/items/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key8},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err57];
}
else {
vErrors.push(err57);
}
errors++;
}
}
if(data32.name !== undefined){
let data33 = data32.name;
const _errs69 = errors;
const _errs70 = errors;
if(typeof data33 === "string"){
if(!pattern1.test(data33)){
const err58 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/name",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/name/pattern",keyword:"pattern",params:{pattern: "^[A-Za-z0-9_.-]{1,64}$"},message:"must match pattern \""+"^[A-Za-z0-9_.-]{1,64}$"+"\""};
if(vErrors === null){
vErrors = [err58];
}
else {
vErrors.push(err58);
}
errors++;
}
}
else {
const err59 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/name",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/name/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err59];
}
else {
vErrors.push(err59);
}
errors++;
}
var valid18 = _errs69 === errors;
}
if(data32.limit !== undefined){
let data34 = data32.limit;
const _errs71 = errors;
if(!(((typeof data34 == "number") && (!(data34 % 1) && !isNaN(data34))) && (isFinite(data34)))){
const err60 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/limit",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/limit/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err60];
}
else {
vErrors.push(err60);
}
errors++;
}
const _errs72 = errors;
if((typeof data34 == "number") && (isFinite(data34))){
if(data34 > 1000000000000 || isNaN(data34)){
const err61 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/limit",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/limit/maximum",keyword:"maximum",params:{comparison: "<=", limit: 1000000000000},message:"must be <= 1000000000000"};
if(vErrors === null){
vErrors = [err61];
}
else {
vErrors.push(err61);
}
errors++;
}
if(data34 < 1 || isNaN(data34)){
const err62 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/limit",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/limit/minimum",keyword:"minimum",params:{comparison: ">=", limit: 1},message:"must be >= 1"};
if(vErrors === null){
vErrors = [err62];
}
else {
vErrors.push(err62);
}
errors++;
}
}
var valid18 = _errs71 === errors;
}
if(data32.window !== undefined){
let data35 = data32.window;
const _errs73 = errors;
if((typeof data35 !== "string") && (!(((typeof data35 == "number") && (!(data35 % 1) && !isNaN(data35))) && (isFinite(data35))))){
const err63 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/window",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/window/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.limits.items.properties.window.type},message:"must be string,integer"};
if(vErrors === null){
vErrors = [err63];
}
else {
vErrors.push(err63);
}
errors++;
}
const _errs74 = errors;
var valid18 = _errs73 === errors;
}
if(data32.granularity !== undefined){
let data36 = data32.granularity;
const _errs75 = errors;
if((typeof data36 !== "string") && (!(((typeof data36 == "number") && (!(data36 % 1) && !isNaN(data36))) && (isFinite(data36))))){
const err64 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/granularity",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/granularity/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.limits.items.properties.granularity.type},message:"must be string,integer"};
if(vErrors === null){
vErrors = [err64];
}
else {
vErrors.push(err64);
}
errors++;
}
const _errs76 = errors;
var valid18 = _errs75 === errors;
}
if(data32.anchor !== undefined){
let data37 = data32.anchor;
const _errs77 = errors;
if((!(((typeof data37 == "number") && (!(data37 % 1) && !isNaN(data37))) && (isFinite(data37)))) && (typeof data37 !== "string")){
const err65 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/anchor",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/anchor/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.limits.items.properties.anchor.type},message:"must be integer,string"};
if(vErrors === null){
vErrors = [err65];
}
else {
vErrors.push(err65);
}
errors++;
}
const _errs78 = errors;
var valid18 = _errs77 === errors;
}
if(data32.timezone !== undefined){
let data38 = data32.timezone;
const _errs79 = errors;
const _errs80 = errors;
if(typeof data38 === "string"){
if(func3(data38) > 64){
const err66 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/timezone",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/timezone/maxLength",keyword:"maxLength",params:{limit: 64},message:"must NOT have more than 64 characters"};
if(vErrors === null){
vErrors = [err66];
}
else {
vErrors.push(err66);
}
errors++;
}
}
else {
const err67 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/timezone",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/timezone/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err67];
}
else {
vErrors.push(err67);
}
errors++;
}
var valid18 = _errs79 === errors;
}
if(data32.rate !== undefined){
let data39 = data32.rate;
const _errs81 = errors;
if(typeof data39 !== "string"){
const err68 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/rate",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/rate/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err68];
}
else {
vErrors.push(err68);
}
errors++;
}
const _errs82 = errors;
var valid18 = _errs81 === errors;
}
if(data32.burst !== undefined){
let data40 = data32.burst;
const _errs83 = errors;
if(!(((typeof data40 == "number") && (!(data40 % 1) && !isNaN(data40))) && (isFinite(data40)))){
const err69 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/burst",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/burst/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err69];
}
else {
vErrors.push(err69);
}
errors++;
}
const _errs84 = errors;
if((typeof data40 == "number") && (isFinite(data40))){
if(data40 > 1000000000000 || isNaN(data40)){
const err70 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/burst",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/burst/maximum",keyword:"maximum",params:{comparison: "<=", limit: 1000000000000},message:"must be <= 1000000000000"};
if(vErrors === null){
vErrors = [err70];
}
else {
vErrors.push(err70);
}
errors++;
}
if(data40 < 1 || isNaN(data40)){
const err71 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/burst",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/burst/minimum",keyword:"minimum",params:{comparison: ">=", limit: 1},message:"must be >= 1"};
if(vErrors === null){
vErrors = [err71];
}
else {
vErrors.push(err71);
}
errors++;
}
}
var valid18 = _errs83 === errors;
}
if(data32.timeout !== undefined){
let data41 = data32.timeout;
const _errs85 = errors;
if((typeof data41 !== "string") && (!(((typeof data41 == "number") && (!(data41 % 1) && !isNaN(data41))) && (isFinite(data41))))){
const err72 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/timeout",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/timeout/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.limits.items.properties.timeout.type},message:"must be string,integer"};
if(vErrors === null){
vErrors = [err72];
}
else {
vErrors.push(err72);
}
errors++;
}
const _errs86 = errors;
var valid18 = _errs85 === errors;
}
if(data32.mode !== undefined){
let data42 = data32.mode;
const _errs87 = errors;
const vSchema7 = schema11.properties.events.additionalProperties.properties.limits.items.properties.mode.enum;
if(!((data42 === "enforce") || (data42 === "shadow"))){
const err73 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4+"/mode",schemaPath:"#/properties/events/additionalProperties/properties/limits/items/properties/mode/enum",keyword:"enum",params:{allowedValues: schema11.properties.events.additionalProperties.properties.limits.items.properties.mode.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err73];
}
else {
vErrors.push(err73);
}
errors++;
}
var valid18 = _errs87 === errors;
}
}
else {
const err74 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i4,schemaPath:"#/properties/events/additionalProperties/properties/limits/items/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err74];
}
else {
vErrors.push(err74);
}
errors++;
}
var valid16 = _errs66 === errors;
if(!valid16){
valid17 = false;
}
}
}
else {
const err75 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits",schemaPath:"#/properties/events/additionalProperties/properties/limits/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err75];
}
else {
vErrors.push(err75);
}
errors++;
}
var valid13 = _errs64 === errors;
}
if(data21.tiers !== undefined){
let data43 = data21.tiers;
const _errs88 = errors;
const _errs89 = errors;
if(data43 && typeof data43 == "object" && !Array.isArray(data43)){
if(Object.keys(data43).length > 32){
const err76 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers",schemaPath:"#/properties/events/additionalProperties/properties/tiers/maxProperties",keyword:"maxProperties",params:{limit: 32},message:"must NOT have more than 32 properties"};
if(vErrors === null){
vErrors = [err76];
}
else {
vErrors.push(err76);
}
errors++;
}
for(const key9 in data43){
const _errs90 = errors;
if(typeof key9 === "string"){
if(!pattern1.test(key9)){
const err77 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers",schemaPath:"#/properties/events/additionalProperties/properties/tiers/propertyNames/pattern",keyword:"pattern",params:{pattern: "^[A-Za-z0-9_.-]{1,64}$"},message:"must match pattern \""+"^[A-Za-z0-9_.-]{1,64}$"+"\"",propertyName:key9};
if(vErrors === null){
vErrors = [err77];
}
else {
vErrors.push(err77);
}
errors++;
}
}
var valid19 = _errs90 === errors;
if(!valid19){
const err78 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers",schemaPath:"#/properties/events/additionalProperties/properties/tiers/propertyNames",keyword:"propertyNames",params:{propertyName: key9},message:"property name must be valid"};
if(vErrors === null){
vErrors = [err78];
}
else {
vErrors.push(err78);
}
errors++;
}
}
const _errs91 = errors;
for(const key10 in data43){
let data44 = data43[key10];
const _errs92 = errors;
const _errs93 = errors;
if(data44 && typeof data44 == "object" && !Array.isArray(data44)){
if(data44.limits === undefined){
const err79 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1"),schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/required",keyword:"required",params:{missingProperty: "limits"},message:"must have required property '"+"limits"+"'"};
if(vErrors === null){
vErrors = [err79];
}
else {
vErrors.push(err79);
}
errors++;
}
const _errs94 = errors;
for(const key11 in data44){
if(!(key11 === "limits")){
const err80 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1"),schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key11},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err80];
}
else {
vErrors.push(err80);
}
errors++;
}
}
if(data44.limits !== undefined){
let data45 = data44.limits;
const _errs95 = errors;
const _errs96 = errors;
if(Array.isArray(data45)){
if(data45.length > 16){
const err81 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/maxItems",keyword:"maxItems",params:{limit: 16},message:"must NOT have more than 16 items"};
if(vErrors === null){
vErrors = [err81];
}
else {
vErrors.push(err81);
}
errors++;
}
if(data45.length < 1){
const err82 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/minItems",keyword:"minItems",params:{limit: 1},message:"must NOT have fewer than 1 items"};
if(vErrors === null){
vErrors = [err82];
}
else {
vErrors.push(err82);
}
errors++;
}
let valid23 = true;
const len5 = data45.length;
for(let i5=0; i5<len5; i5++){
let data46 = data45[i5];
const _errs97 = errors;
const _errs98 = errors;
if(data46 && typeof data46 == "object" && !Array.isArray(data46)){
const _errs99 = errors;
for(const key12 in data46){
if(!(func2.call(schema11.properties.events.additionalProperties.properties.tiers.additionalProperties.properties.limits.items.properties, key12))){
const err83 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5,schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key12},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err83];
}
else {
vErrors.push(err83);
}
errors++;
}
}
if(data46.name !== undefined){
let data47 = data46.name;
const _errs100 = errors;
const _errs101 = errors;
if(typeof data47 === "string"){
if(!pattern1.test(data47)){
const err84 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/name",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/name/pattern",keyword:"pattern",params:{pattern: "^[A-Za-z0-9_.-]{1,64}$"},message:"must match pattern \""+"^[A-Za-z0-9_.-]{1,64}$"+"\""};
if(vErrors === null){
vErrors = [err84];
}
else {
vErrors.push(err84);
}
errors++;
}
}
else {
const err85 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/name",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/name/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err85];
}
else {
vErrors.push(err85);
}
errors++;
}
var valid24 = _errs100 === errors;
}
if(data46.limit !== undefined){
let data48 = data46.limit;
const _errs102 = errors;
if(!(((typeof data48 == "number") && (!(data48 % 1) && !isNaN(data48))) && (isFinite(data48)))){
const err86 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/limit",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/limit/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err86];
}
else {
vErrors.push(err86);
}
errors++;
}
const _errs103 = errors;
if((typeof data48 == "number") && (isFinite(data48))){
if(data48 > 1000000000000 || isNaN(data48)){
const err87 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/limit",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/limit/maximum",keyword:"maximum",params:{comparison: "<=", limit: 1000000000000},message:"must be <= 1000000000000"};
if(vErrors === null){
vErrors = [err87];
}
else {
vErrors.push(err87);
}
errors++;
}
if(data48 < 1 || isNaN(data48)){
const err88 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/limit",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/limit/minimum",keyword:"minimum",params:{comparison: ">=", limit: 1},message:"must be >= 1"};
if(vErrors === null){
vErrors = [err88];
}
else {
vErrors.push(err88);
}
errors++;
}
}
var valid24 = _errs102 === errors;
}
if(data46.window !== undefined){
let data49 = data46.window;
const _errs104 = errors;
if((typeof data49 !== "string") && (!(((typeof data49 == "number") && (!(data49 % 1) && !isNaN(data49))) && (isFinite(data49))))){
const err89 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/window",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/window/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.tiers.additionalProperties.properties.limits.items.properties.window.type},message:"must be string,integer"};
if(vErrors === null){
vErrors = [err89];
}
else {
vErrors.push(err89);
}
errors++;
}
const _errs105 = errors;
var valid24 = _errs104 === errors;
}
if(data46.granularity !== undefined){
let data50 = data46.granularity;
const _errs106 = errors;
if((typeof data50 !== "string") && (!(((typeof data50 == "number") && (!(data50 % 1) && !isNaN(data50))) && (isFinite(data50))))){
const err90 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/granularity",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/granularity/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.tiers.additionalProperties.properties.limits.items.properties.granularity.type},message:"must be string,integer"};
if(vErrors === null){
vErrors = [err90];
}
else {
vErrors.push(err90);
}
errors++;
}
const _errs107 = errors;
var valid24 = _errs106 === errors;
}
if(data46.anchor !== undefined){
let data51 = data46.anchor;
const _errs108 = errors;
if((!(((typeof data51 == "number") && (!(data51 % 1) && !isNaN(data51))) && (isFinite(data51)))) && (typeof data51 !== "string")){
const err91 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/anchor",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/anchor/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.tiers.additionalProperties.properties.limits.items.properties.anchor.type},message:"must be integer,string"};
if(vErrors === null){
vErrors = [err91];
}
else {
vErrors.push(err91);
}
errors++;
}
const _errs109 = errors;
var valid24 = _errs108 === errors;
}
if(data46.timezone !== undefined){
let data52 = data46.timezone;
const _errs110 = errors;
const _errs111 = errors;
if(typeof data52 === "string"){
if(func3(data52) > 64){
const err92 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/timezone",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/timezone/maxLength",keyword:"maxLength",params:{limit: 64},message:"must NOT have more than 64 characters"};
if(vErrors === null){
vErrors = [err92];
}
else {
vErrors.push(err92);
}
errors++;
}
}
else {
const err93 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/timezone",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/timezone/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err93];
}
else {
vErrors.push(err93);
}
errors++;
}
var valid24 = _errs110 === errors;
}
if(data46.rate !== undefined){
let data53 = data46.rate;
const _errs112 = errors;
if(typeof data53 !== "string"){
const err94 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/rate",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/rate/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err94];
}
else {
vErrors.push(err94);
}
errors++;
}
const _errs113 = errors;
var valid24 = _errs112 === errors;
}
if(data46.burst !== undefined){
let data54 = data46.burst;
const _errs114 = errors;
if(!(((typeof data54 == "number") && (!(data54 % 1) && !isNaN(data54))) && (isFinite(data54)))){
const err95 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/burst",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/burst/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err95];
}
else {
vErrors.push(err95);
}
errors++;
}
const _errs115 = errors;
if((typeof data54 == "number") && (isFinite(data54))){
if(data54 > 1000000000000 || isNaN(data54)){
const err96 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/burst",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/burst/maximum",keyword:"maximum",params:{comparison: "<=", limit: 1000000000000},message:"must be <= 1000000000000"};
if(vErrors === null){
vErrors = [err96];
}
else {
vErrors.push(err96);
}
errors++;
}
if(data54 < 1 || isNaN(data54)){
const err97 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/burst",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/burst/minimum",keyword:"minimum",params:{comparison: ">=", limit: 1},message:"must be >= 1"};
if(vErrors === null){
vErrors = [err97];
}
else {
vErrors.push(err97);
}
errors++;
}
}
var valid24 = _errs114 === errors;
}
if(data46.timeout !== undefined){
let data55 = data46.timeout;
const _errs116 = errors;
if((typeof data55 !== "string") && (!(((typeof data55 == "number") && (!(data55 % 1) && !isNaN(data55))) && (isFinite(data55))))){
const err98 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/timeout",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/timeout/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.tiers.additionalProperties.properties.limits.items.properties.timeout.type},message:"must be string,integer"};
if(vErrors === null){
vErrors = [err98];
}
else {
vErrors.push(err98);
}
errors++;
}
const _errs117 = errors;
var valid24 = _errs116 === errors;
}
if(data46.mode !== undefined){
let data56 = data46.mode;
const _errs118 = errors;
const vSchema8 = schema11.properties.events.additionalProperties.properties.tiers.additionalProperties.properties.limits.items.properties.mode.enum;
if(!((data56 === "enforce") || (data56 === "shadow"))){
const err99 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5+"/mode",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/properties/mode/enum",keyword:"enum",params:{allowedValues: schema11.properties.events.additionalProperties.properties.tiers.additionalProperties.properties.limits.items.properties.mode.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err99];
}
else {
vErrors.push(err99);
}
errors++;
}
var valid24 = _errs118 === errors;
}
}
else {
const err100 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits/" + i5,schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/items/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err100];
}
else {
vErrors.push(err100);
}
errors++;
}
var valid22 = _errs97 === errors;
if(!valid22){
valid23 = false;
}
}
}
else {
const err101 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1")+"/limits",schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/properties/limits/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err101];
}
else {
vErrors.push(err101);
}
errors++;
}
var valid21 = _errs95 === errors;
}
}
else {
const err102 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers/" + key10.replace(/~/g, "~0").replace(/\//g, "~1"),schemaPath:"#/properties/events/additionalProperties/properties/tiers/additionalProperties/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err102];
}
else {
vErrors.push(err102);
}
errors++;
}
var valid20 = _errs92 === errors;
}
}
else {
const err103 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/tiers",schemaPath:"#/properties/events/additionalProperties/properties/tiers/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err103];
}
else {
vErrors.push(err103);
}
errors++;
}
var valid13 = _errs88 === errors;
}
if(data21.overrides !== undefined){
let data57 = data21.overrides;
const _errs119 = errors;
const _errs120 = errors;
if(Array.isArray(data57)){
if(data57.length > 10000){
const err104 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides",schemaPath:"#/properties/events/additionalProperties/properties/overrides/maxItems",keyword:"maxItems",params:{limit: 10000},message:"must NOT have more than 10000 items"};
if(vErrors === null){
vErrors = [err104];
}
else {
vErrors.push(err104);
}
errors++;
}
let valid26 = true;
const len6 = data57.length;
for(let i6=0; i6<len6; i6++){
let data58 = data57[i6];
const _errs121 = errors;
const _errs122 = errors;
if(data58 && typeof data58 == "object" && !Array.isArray(data58)){
if(data58.match === undefined){
const err105 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6,schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/required",keyword:"required",params:{missingProperty: "match"},message:"must have required property '"+"match"+"'"};
if(vErrors === null){
vErrors = [err105];
}
else {
vErrors.push(err105);
}
errors++;
}
const _errs123 = errors;
for(const key13 in data58){
if(!((((key13 === "match") || (key13 === "limits")) || (key13 === "tier")) || (key13 === "until"))){
const err106 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6,schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key13},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err106];
}
else {
vErrors.push(err106);
}
errors++;
}
}
if(data58.match !== undefined){
let data59 = data58.match;
const _errs124 = errors;
if(!(data59 && typeof data59 == "object" && !Array.isArray(data59))){
const err107 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/match",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/match/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err107];
}
else {
vErrors.push(err107);
}
errors++;
}
const _errs125 = errors;
var valid27 = _errs124 === errors;
}
if(data58.limits !== undefined){
let data60 = data58.limits;
const _errs126 = errors;
const _errs127 = errors;
if(Array.isArray(data60)){
if(data60.length > 16){
const err108 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/maxItems",keyword:"maxItems",params:{limit: 16},message:"must NOT have more than 16 items"};
if(vErrors === null){
vErrors = [err108];
}
else {
vErrors.push(err108);
}
errors++;
}
if(data60.length < 1){
const err109 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/minItems",keyword:"minItems",params:{limit: 1},message:"must NOT have fewer than 1 items"};
if(vErrors === null){
vErrors = [err109];
}
else {
vErrors.push(err109);
}
errors++;
}
let valid29 = true;
const len7 = data60.length;
for(let i7=0; i7<len7; i7++){
let data61 = data60[i7];
const _errs128 = errors;
const _errs129 = errors;
if(data61 && typeof data61 == "object" && !Array.isArray(data61)){
const _errs130 = errors;
for(const key14 in data61){
if(!(func2.call(schema11.properties.events.additionalProperties.properties.overrides.items.properties.limits.items.properties, key14))){
const err110 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7,schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key14},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err110];
}
else {
vErrors.push(err110);
}
errors++;
}
}
if(data61.name !== undefined){
let data62 = data61.name;
const _errs131 = errors;
const _errs132 = errors;
if(typeof data62 === "string"){
if(!pattern1.test(data62)){
const err111 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/name",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/name/pattern",keyword:"pattern",params:{pattern: "^[A-Za-z0-9_.-]{1,64}$"},message:"must match pattern \""+"^[A-Za-z0-9_.-]{1,64}$"+"\""};
if(vErrors === null){
vErrors = [err111];
}
else {
vErrors.push(err111);
}
errors++;
}
}
else {
const err112 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/name",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/name/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err112];
}
else {
vErrors.push(err112);
}
errors++;
}
var valid30 = _errs131 === errors;
}
if(data61.limit !== undefined){
let data63 = data61.limit;
const _errs133 = errors;
if(!(((typeof data63 == "number") && (!(data63 % 1) && !isNaN(data63))) && (isFinite(data63)))){
const err113 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/limit",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/limit/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err113];
}
else {
vErrors.push(err113);
}
errors++;
}
const _errs134 = errors;
if((typeof data63 == "number") && (isFinite(data63))){
if(data63 > 1000000000000 || isNaN(data63)){
const err114 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/limit",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/limit/maximum",keyword:"maximum",params:{comparison: "<=", limit: 1000000000000},message:"must be <= 1000000000000"};
if(vErrors === null){
vErrors = [err114];
}
else {
vErrors.push(err114);
}
errors++;
}
if(data63 < 1 || isNaN(data63)){
const err115 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/limit",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/limit/minimum",keyword:"minimum",params:{comparison: ">=", limit: 1},message:"must be >= 1"};
if(vErrors === null){
vErrors = [err115];
}
else {
vErrors.push(err115);
}
errors++;
}
}
var valid30 = _errs133 === errors;
}
if(data61.window !== undefined){
let data64 = data61.window;
const _errs135 = errors;
if((typeof data64 !== "string") && (!(((typeof data64 == "number") && (!(data64 % 1) && !isNaN(data64))) && (isFinite(data64))))){
const err116 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/window",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/window/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.overrides.items.properties.limits.items.properties.window.type},message:"must be string,integer"};
if(vErrors === null){
vErrors = [err116];
}
else {
vErrors.push(err116);
}
errors++;
}
const _errs136 = errors;
var valid30 = _errs135 === errors;
}
if(data61.granularity !== undefined){
let data65 = data61.granularity;
const _errs137 = errors;
if((typeof data65 !== "string") && (!(((typeof data65 == "number") && (!(data65 % 1) && !isNaN(data65))) && (isFinite(data65))))){
const err117 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/granularity",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/granularity/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.overrides.items.properties.limits.items.properties.granularity.type},message:"must be string,integer"};
if(vErrors === null){
vErrors = [err117];
}
else {
vErrors.push(err117);
}
errors++;
}
const _errs138 = errors;
var valid30 = _errs137 === errors;
}
if(data61.anchor !== undefined){
let data66 = data61.anchor;
const _errs139 = errors;
if((!(((typeof data66 == "number") && (!(data66 % 1) && !isNaN(data66))) && (isFinite(data66)))) && (typeof data66 !== "string")){
const err118 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/anchor",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/anchor/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.overrides.items.properties.limits.items.properties.anchor.type},message:"must be integer,string"};
if(vErrors === null){
vErrors = [err118];
}
else {
vErrors.push(err118);
}
errors++;
}
const _errs140 = errors;
var valid30 = _errs139 === errors;
}
if(data61.timezone !== undefined){
let data67 = data61.timezone;
const _errs141 = errors;
const _errs142 = errors;
if(typeof data67 === "string"){
if(func3(data67) > 64){
const err119 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/timezone",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/timezone/maxLength",keyword:"maxLength",params:{limit: 64},message:"must NOT have more than 64 characters"};
if(vErrors === null){
vErrors = [err119];
}
else {
vErrors.push(err119);
}
errors++;
}
}
else {
const err120 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/timezone",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/timezone/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err120];
}
else {
vErrors.push(err120);
}
errors++;
}
var valid30 = _errs141 === errors;
}
if(data61.rate !== undefined){
let data68 = data61.rate;
const _errs143 = errors;
if(typeof data68 !== "string"){
const err121 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/rate",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/rate/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err121];
}
else {
vErrors.push(err121);
}
errors++;
}
const _errs144 = errors;
var valid30 = _errs143 === errors;
}
if(data61.burst !== undefined){
let data69 = data61.burst;
const _errs145 = errors;
if(!(((typeof data69 == "number") && (!(data69 % 1) && !isNaN(data69))) && (isFinite(data69)))){
const err122 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/burst",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/burst/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err122];
}
else {
vErrors.push(err122);
}
errors++;
}
const _errs146 = errors;
if((typeof data69 == "number") && (isFinite(data69))){
if(data69 > 1000000000000 || isNaN(data69)){
const err123 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/burst",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/burst/maximum",keyword:"maximum",params:{comparison: "<=", limit: 1000000000000},message:"must be <= 1000000000000"};
if(vErrors === null){
vErrors = [err123];
}
else {
vErrors.push(err123);
}
errors++;
}
if(data69 < 1 || isNaN(data69)){
const err124 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/burst",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/burst/minimum",keyword:"minimum",params:{comparison: ">=", limit: 1},message:"must be >= 1"};
if(vErrors === null){
vErrors = [err124];
}
else {
vErrors.push(err124);
}
errors++;
}
}
var valid30 = _errs145 === errors;
}
if(data61.timeout !== undefined){
let data70 = data61.timeout;
const _errs147 = errors;
if((typeof data70 !== "string") && (!(((typeof data70 == "number") && (!(data70 % 1) && !isNaN(data70))) && (isFinite(data70))))){
const err125 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/timeout",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/timeout/type",keyword:"type",params:{type: schema11.properties.events.additionalProperties.properties.overrides.items.properties.limits.items.properties.timeout.type},message:"must be string,integer"};
if(vErrors === null){
vErrors = [err125];
}
else {
vErrors.push(err125);
}
errors++;
}
const _errs148 = errors;
var valid30 = _errs147 === errors;
}
if(data61.mode !== undefined){
let data71 = data61.mode;
const _errs149 = errors;
const vSchema9 = schema11.properties.events.additionalProperties.properties.overrides.items.properties.limits.items.properties.mode.enum;
if(!((data71 === "enforce") || (data71 === "shadow"))){
const err126 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7+"/mode",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/properties/mode/enum",keyword:"enum",params:{allowedValues: schema11.properties.events.additionalProperties.properties.overrides.items.properties.limits.items.properties.mode.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err126];
}
else {
vErrors.push(err126);
}
errors++;
}
var valid30 = _errs149 === errors;
}
}
else {
const err127 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits/" + i7,schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/items/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err127];
}
else {
vErrors.push(err127);
}
errors++;
}
var valid28 = _errs128 === errors;
if(!valid28){
valid29 = false;
}
}
}
else {
const err128 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/limits",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/limits/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err128];
}
else {
vErrors.push(err128);
}
errors++;
}
var valid27 = _errs126 === errors;
}
if(data58.tier !== undefined){
let data72 = data58.tier;
const _errs150 = errors;
const _errs151 = errors;
if(typeof data72 === "string"){
if(!pattern1.test(data72)){
const err129 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/tier",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/tier/pattern",keyword:"pattern",params:{pattern: "^[A-Za-z0-9_.-]{1,64}$"},message:"must match pattern \""+"^[A-Za-z0-9_.-]{1,64}$"+"\""};
if(vErrors === null){
vErrors = [err129];
}
else {
vErrors.push(err129);
}
errors++;
}
}
else {
const err130 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/tier",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/tier/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err130];
}
else {
vErrors.push(err130);
}
errors++;
}
var valid27 = _errs150 === errors;
}
if(data58.until !== undefined){
let data73 = data58.until;
const _errs152 = errors;
if(typeof data73 !== "string"){
const err131 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6+"/until",schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/properties/until/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err131];
}
else {
vErrors.push(err131);
}
errors++;
}
const _errs153 = errors;
var valid27 = _errs152 === errors;
}
}
else {
const err132 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides/" + i6,schemaPath:"#/properties/events/additionalProperties/properties/overrides/items/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err132];
}
else {
vErrors.push(err132);
}
errors++;
}
var valid25 = _errs121 === errors;
if(!valid25){
valid26 = false;
}
}
}
else {
const err133 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/overrides",schemaPath:"#/properties/events/additionalProperties/properties/overrides/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err133];
}
else {
vErrors.push(err133);
}
errors++;
}
var valid13 = _errs119 === errors;
}
if(data21.allow !== undefined){
let data74 = data21.allow;
const _errs154 = errors;
const _errs155 = errors;
if(Array.isArray(data74)){
if(data74.length > 10000){
const err134 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/allow",schemaPath:"#/properties/events/additionalProperties/properties/allow/maxItems",keyword:"maxItems",params:{limit: 10000},message:"must NOT have more than 10000 items"};
if(vErrors === null){
vErrors = [err134];
}
else {
vErrors.push(err134);
}
errors++;
}
let valid32 = true;
const len8 = data74.length;
for(let i8=0; i8<len8; i8++){
let data75 = data74[i8];
const _errs156 = errors;
if(!(data75 && typeof data75 == "object" && !Array.isArray(data75))){
const err135 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/allow/" + i8,schemaPath:"#/properties/events/additionalProperties/properties/allow/items/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err135];
}
else {
vErrors.push(err135);
}
errors++;
}
const _errs157 = errors;
var valid31 = _errs156 === errors;
if(!valid31){
valid32 = false;
}
}
}
else {
const err136 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/allow",schemaPath:"#/properties/events/additionalProperties/properties/allow/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err136];
}
else {
vErrors.push(err136);
}
errors++;
}
var valid13 = _errs154 === errors;
}
if(data21.deny !== undefined){
let data76 = data21.deny;
const _errs158 = errors;
const _errs159 = errors;
if(Array.isArray(data76)){
if(data76.length > 10000){
const err137 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/deny",schemaPath:"#/properties/events/additionalProperties/properties/deny/maxItems",keyword:"maxItems",params:{limit: 10000},message:"must NOT have more than 10000 items"};
if(vErrors === null){
vErrors = [err137];
}
else {
vErrors.push(err137);
}
errors++;
}
let valid34 = true;
const len9 = data76.length;
for(let i9=0; i9<len9; i9++){
let data77 = data76[i9];
const _errs160 = errors;
if(!(data77 && typeof data77 == "object" && !Array.isArray(data77))){
const err138 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/deny/" + i9,schemaPath:"#/properties/events/additionalProperties/properties/deny/items/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err138];
}
else {
vErrors.push(err138);
}
errors++;
}
const _errs161 = errors;
var valid33 = _errs160 === errors;
if(!valid33){
valid34 = false;
}
}
}
else {
const err139 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1")+"/deny",schemaPath:"#/properties/events/additionalProperties/properties/deny/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err139];
}
else {
vErrors.push(err139);
}
errors++;
}
var valid13 = _errs158 === errors;
}
}
else {
const err140 = {instancePath:instancePath+"/events/" + key4.replace(/~/g, "~0").replace(/\//g, "~1"),schemaPath:"#/properties/events/additionalProperties/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err140];
}
else {
vErrors.push(err140);
}
errors++;
}
var valid12 = _errs45 === errors;
}
}
else {
const err141 = {instancePath:instancePath+"/events",schemaPath:"#/properties/events/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err141];
}
else {
vErrors.push(err141);
}
errors++;
}
var valid0 = _errs41 === errors;
}
}
else {
const err142 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err142];
}
else {
vErrors.push(err142);
}
errors++;
}
validate10.errors = vErrors;
return errors === 0;
}
