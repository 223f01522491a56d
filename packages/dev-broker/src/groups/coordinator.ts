// Classic consumer-group coordinator: Empty -> PreparingRebalance -> CompletingRebalance -> Stable.
// Assignments and member metadata are opaque bytes; the leader computes assignments client-side.
// Everything runs on the event loop, so parked JoinGroup/SyncGroup requests are plain callbacks.
import { randomUUID } from "node:crypto";
import type { Logger } from "../logger.ts";
import type { OffsetsStore } from "../offsets-store.ts";
import { ErrorCode } from "../protocol/errors.ts";

type GroupState = "Empty" | "PreparingRebalance" | "CompletingRebalance" | "Stable" | "Dead";

interface GroupProtocol {
  name: string;
  metadata: Buffer;
}

export interface JoinRequest {
  groupId: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  memberId: string;
  protocolType: string;
  protocols: GroupProtocol[];
  clientId: string;
  clientHost: string;
  /** JoinGroup v4+ (KIP-394): a new member first gets MEMBER_ID_REQUIRED with its id. */
  requireKnownMemberId: boolean;
}

export interface JoinResult {
  errorCode: number;
  generationId: number;
  protocolName: string;
  leaderId: string;
  memberId: string;
  members: Array<{ memberId: string; metadata: Buffer }>;
}

export interface SyncResult {
  errorCode: number;
  assignment: Buffer;
}

interface Member {
  memberId: string;
  clientId: string;
  clientHost: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocols: GroupProtocol[];
  assignment: Buffer;
  pendingJoin: ((result: JoinResult) => void) | null;
  pendingSync: ((result: SyncResult) => void) | null;
  sessionTimer: NodeJS.Timeout | null;
}

interface Group {
  groupId: string;
  state: GroupState;
  generation: number;
  protocolType: string;
  protocol: string;
  leaderId: string | null;
  members: Map<string, Member>;
  pendingMemberIds: Map<string, NodeJS.Timeout>;
  rebalanceTimer: NodeJS.Timeout | null;
  initialDelayPending: boolean;
}

export interface CoordinatorOptions {
  minSessionTimeoutMs: number;
  maxSessionTimeoutMs: number;
  initialRebalanceDelayMs: number;
  logger: Logger;
  /** Called when a group starts rebalancing, so parked fetches of its members can be released early. */
  onPreparingRebalance?: (clientIds: Set<string>) => void;
}

export interface GroupDescription {
  errorCode: number;
  groupId: string;
  state: GroupState;
  protocolType: string;
  protocol: string;
  members: Array<{
    memberId: string;
    clientId: string;
    clientHost: string;
    metadata: Buffer;
    assignment: Buffer;
  }>;
}

const EMPTY = Buffer.alloc(0);

function joinError(errorCode: number, memberId: string): JoinResult {
  return { errorCode, generationId: -1, protocolName: "", leaderId: "", memberId, members: [] };
}

function sameProtocols(a: GroupProtocol[], b: GroupProtocol[]): boolean {
  return (
    a.length === b.length &&
    a.every((p, i) => p.name === b[i]?.name && p.metadata.equals(b[i]?.metadata ?? EMPTY))
  );
}

export class GroupCoordinator {
  private readonly groups = new Map<string, Group>();
  /** Commits accepted while their group was PreparingRebalance (kafkajs commits before rejoining). */
  commitsDuringRebalance = 0;
  private readonly options: CoordinatorOptions;
  private readonly offsets: OffsetsStore;

  constructor(options: CoordinatorOptions, offsets: OffsetsStore) {
    this.options = options;
    this.offsets = offsets;
  }

  private group(groupId: string): Group {
    let group = this.groups.get(groupId);
    if (group === undefined) {
      group = {
        groupId,
        state: "Empty",
        generation: 0,
        protocolType: "",
        protocol: "",
        leaderId: null,
        members: new Map(),
        pendingMemberIds: new Map(),
        rebalanceTimer: null,
        initialDelayPending: false,
      };
      this.groups.set(groupId, group);
    }
    return group;
  }

  join(request: JoinRequest): Promise<JoinResult> | JoinResult {
    const { groupId, memberId } = request;
    if (groupId === "") {
      return joinError(ErrorCode.INVALID_GROUP_ID, memberId);
    }
    if (
      request.sessionTimeoutMs < this.options.minSessionTimeoutMs ||
      request.sessionTimeoutMs > this.options.maxSessionTimeoutMs
    ) {
      return joinError(ErrorCode.INVALID_SESSION_TIMEOUT, memberId);
    }
    const group = this.group(groupId);
    const others = [...group.members.values()].filter((m) => m.memberId !== memberId);
    if (
      others.length > 0 &&
      (request.protocolType !== group.protocolType ||
        !request.protocols.some((p) =>
          others.every((m) => m.protocols.some((q) => q.name === p.name)),
        ))
    ) {
      return joinError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, memberId);
    }

    if (memberId === "") {
      const newMemberId = `${request.clientId}-${randomUUID()}`;
      if (request.requireKnownMemberId) {
        const timer = setTimeout(
          () => group.pendingMemberIds.delete(newMemberId),
          request.sessionTimeoutMs,
        );
        timer.unref();
        group.pendingMemberIds.set(newMemberId, timer);
        return joinError(ErrorCode.MEMBER_ID_REQUIRED, newMemberId);
      }
      return this.addMember(group, newMemberId, request);
    }
    const pendingTimer = group.pendingMemberIds.get(memberId);
    if (pendingTimer !== undefined) {
      clearTimeout(pendingTimer);
      group.pendingMemberIds.delete(memberId);
      return this.addMember(group, memberId, request);
    }
    const member = group.members.get(memberId);
    if (member === undefined) {
      return joinError(ErrorCode.UNKNOWN_MEMBER_ID, memberId);
    }
    member.sessionTimeoutMs = request.sessionTimeoutMs;
    member.rebalanceTimeoutMs = request.rebalanceTimeoutMs;
    const unchanged = sameProtocols(member.protocols, request.protocols);
    if (unchanged && group.state === "CompletingRebalance") {
      this.armSession(group, member);
      return this.joinResultFor(group, member);
    }
    if (unchanged && group.state === "Stable" && group.leaderId !== memberId) {
      this.armSession(group, member);
      return this.joinResultFor(group, member);
    }
    member.protocols = request.protocols;
    const parked = this.park(member);
    this.prepareRebalance(group, `member ${memberId} rejoined`);
    this.maybeCompleteJoin(group);
    return parked;
  }

  private addMember(group: Group, memberId: string, request: JoinRequest): Promise<JoinResult> {
    const member: Member = {
      memberId,
      clientId: request.clientId,
      clientHost: request.clientHost,
      sessionTimeoutMs: request.sessionTimeoutMs,
      rebalanceTimeoutMs: request.rebalanceTimeoutMs,
      protocols: request.protocols,
      assignment: EMPTY,
      pendingJoin: null,
      pendingSync: null,
      sessionTimer: null,
    };
    if (group.members.size === 0) {
      group.protocolType = request.protocolType;
    }
    group.members.set(memberId, member);
    if (group.leaderId === null) {
      group.leaderId = memberId;
    }
    const parked = this.park(member);
    this.prepareRebalance(group, `member ${memberId} joined`);
    this.maybeCompleteJoin(group);
    return parked;
  }

  private park(member: Member): Promise<JoinResult> {
    member.pendingJoin?.(joinError(ErrorCode.REBALANCE_IN_PROGRESS, member.memberId));
    this.stopSession(member);
    return new Promise((resolve) => {
      member.pendingJoin = resolve;
    });
  }

  private joinResultFor(group: Group, member: Member): JoinResult {
    const isLeader = group.leaderId === member.memberId;
    return {
      errorCode: ErrorCode.NONE,
      generationId: group.generation,
      protocolName: group.protocol,
      leaderId: group.leaderId ?? "",
      memberId: member.memberId,
      members: isLeader
        ? [...group.members.values()].map((m) => ({
            memberId: m.memberId,
            metadata: m.protocols.find((p) => p.name === group.protocol)?.metadata ?? EMPTY,
          }))
        : [],
    };
  }

  private prepareRebalance(group: Group, reason: string): void {
    if (group.state === "CompletingRebalance") {
      for (const m of group.members.values()) {
        this.answerSync(m, { errorCode: ErrorCode.REBALANCE_IN_PROGRESS, assignment: EMPTY });
      }
    }
    if (group.state === "PreparingRebalance") {
      return;
    }
    const wasEmpty = group.state === "Empty";
    group.state = "PreparingRebalance";
    for (const m of group.members.values()) {
      m.assignment = EMPTY;
    }
    const delay = wasEmpty
      ? this.options.initialRebalanceDelayMs
      : Math.max(0, ...[...group.members.values()].map((m) => m.rebalanceTimeoutMs));
    group.initialDelayPending = wasEmpty && delay > 0;
    this.options.logger.debug("group rebalancing", { groupId: group.groupId, reason });
    group.rebalanceTimer = setTimeout(() => {
      group.rebalanceTimer = null;
      group.initialDelayPending = false;
      if (wasEmpty) {
        this.maybeCompleteJoin(group);
      } else {
        this.completeJoin(group);
      }
    }, delay);
    group.rebalanceTimer.unref();
    this.options.onPreparingRebalance?.(
      new Set([...group.members.values()].map((m) => m.clientId)),
    );
  }

  private maybeCompleteJoin(group: Group): void {
    if (group.state !== "PreparingRebalance" || group.initialDelayPending) {
      return;
    }
    for (const m of group.members.values()) {
      if (m.pendingJoin === null) {
        return;
      }
    }
    this.completeJoin(group);
  }

  private completeJoin(group: Group): void {
    if (group.state !== "PreparingRebalance") {
      return;
    }
    if (group.rebalanceTimer !== null) {
      clearTimeout(group.rebalanceTimer);
      group.rebalanceTimer = null;
    }
    for (const m of [...group.members.values()]) {
      if (m.pendingJoin === null) {
        this.options.logger.info("member failed to rejoin in time", {
          groupId: group.groupId,
          memberId: m.memberId,
        });
        this.removeMember(group, m, ErrorCode.UNKNOWN_MEMBER_ID);
      }
    }
    group.generation++;
    if (group.members.size === 0) {
      this.becomeEmpty(group);
      return;
    }
    if (group.leaderId === null || !group.members.has(group.leaderId)) {
      group.leaderId = group.members.keys().next().value ?? null;
    }
    group.protocol = this.chooseProtocol(group);
    group.state = "CompletingRebalance";
    for (const m of group.members.values()) {
      const resolve = m.pendingJoin;
      m.pendingJoin = null;
      this.armSession(group, m);
      resolve?.(this.joinResultFor(group, m));
    }
  }

  private chooseProtocol(group: Group): string {
    const members = [...group.members.values()];
    const candidates = (members[0]?.protocols ?? [])
      .map((p) => p.name)
      .filter((name) => members.every((m) => m.protocols.some((p) => p.name === name)));
    const votes = new Map<string, number>();
    for (const m of members) {
      const vote = m.protocols.find((p) => candidates.includes(p.name));
      if (vote) {
        votes.set(vote.name, (votes.get(vote.name) ?? 0) + 1);
      }
    }
    let best = candidates[0] ?? "";
    for (const [name, count] of votes) {
      if (count > (votes.get(best) ?? 0)) {
        best = name;
      }
    }
    return best;
  }

  private becomeEmpty(group: Group): void {
    if (group.rebalanceTimer !== null) {
      clearTimeout(group.rebalanceTimer);
      group.rebalanceTimer = null;
    }
    group.state = "Empty";
    group.leaderId = null;
    group.protocol = "";
  }

  private removeMember(group: Group, member: Member, pendingErrorCode: number): void {
    this.stopSession(member);
    group.members.delete(member.memberId);
    const pendingJoin = member.pendingJoin;
    member.pendingJoin = null;
    pendingJoin?.(joinError(pendingErrorCode, member.memberId));
    this.answerSync(member, { errorCode: pendingErrorCode, assignment: EMPTY });
    if (group.leaderId === member.memberId) {
      group.leaderId = null;
    }
  }

  /** A member left or died: rebalance the rest, or go Empty. */
  private memberGone(group: Group, member: Member, reason: string): void {
    this.removeMember(group, member, ErrorCode.UNKNOWN_MEMBER_ID);
    this.options.logger.info(reason, { groupId: group.groupId, memberId: member.memberId });
    if (group.members.size === 0) {
      group.generation++;
      this.becomeEmpty(group);
      return;
    }
    if (group.leaderId === null) {
      group.leaderId = group.members.keys().next().value ?? null;
    }
    this.prepareRebalance(group, reason);
    this.maybeCompleteJoin(group);
  }

  private answerSync(member: Member, result: SyncResult): void {
    const resolve = member.pendingSync;
    member.pendingSync = null;
    resolve?.(result);
  }

  private stopSession(member: Member): void {
    if (member.sessionTimer !== null) {
      clearTimeout(member.sessionTimer);
      member.sessionTimer = null;
    }
  }

  private armSession(group: Group, member: Member): void {
    this.stopSession(member);
    member.sessionTimer = setTimeout(() => {
      member.sessionTimer = null;
      if (group.members.get(member.memberId) === member) {
        this.memberGone(group, member, "member session expired");
      }
    }, member.sessionTimeoutMs);
    member.sessionTimer.unref();
  }

  sync(
    groupId: string,
    generationId: number,
    memberId: string,
    assignments: Array<{ memberId: string; assignment: Buffer }>,
  ): Promise<SyncResult> | SyncResult {
    const group = this.groups.get(groupId);
    const member = group?.members.get(memberId);
    if (group === undefined || member === undefined) {
      return { errorCode: ErrorCode.UNKNOWN_MEMBER_ID, assignment: EMPTY };
    }
    if (generationId !== group.generation) {
      return { errorCode: ErrorCode.ILLEGAL_GENERATION, assignment: EMPTY };
    }
    if (group.state === "PreparingRebalance") {
      return { errorCode: ErrorCode.REBALANCE_IN_PROGRESS, assignment: EMPTY };
    }
    if (group.state === "Stable") {
      this.armSession(group, member);
      return { errorCode: ErrorCode.NONE, assignment: member.assignment };
    }
    this.answerSync(member, { errorCode: ErrorCode.REBALANCE_IN_PROGRESS, assignment: EMPTY });
    this.stopSession(member);
    const parked = new Promise<SyncResult>((resolve) => {
      member.pendingSync = resolve;
    });
    if (memberId === group.leaderId) {
      const byMember = new Map(assignments.map((a) => [a.memberId, a.assignment]));
      group.state = "Stable";
      for (const m of group.members.values()) {
        m.assignment = Buffer.from(byMember.get(m.memberId) ?? EMPTY);
        this.armSession(group, m);
        this.answerSync(m, { errorCode: ErrorCode.NONE, assignment: m.assignment });
      }
      this.options.logger.debug("group stable", {
        groupId,
        generation: group.generation,
        members: group.members.size,
      });
    }
    return parked;
  }

  heartbeat(groupId: string, generationId: number, memberId: string): number {
    const group = this.groups.get(groupId);
    const member = group?.members.get(memberId);
    if (group === undefined || member === undefined) {
      return ErrorCode.UNKNOWN_MEMBER_ID;
    }
    if (member.pendingJoin === null && member.pendingSync === null) {
      this.armSession(group, member);
    }
    if (group.state === "PreparingRebalance") {
      return ErrorCode.REBALANCE_IN_PROGRESS;
    }
    if (generationId !== group.generation) {
      return ErrorCode.ILLEGAL_GENERATION;
    }
    return ErrorCode.NONE;
  }

  leave(groupId: string, memberId: string): number {
    const group = this.groups.get(groupId);
    const member = group?.members.get(memberId);
    if (group === undefined || member === undefined) {
      return ErrorCode.UNKNOWN_MEMBER_ID;
    }
    this.memberGone(group, member, "member left the group");
    return ErrorCode.NONE;
  }

  /** Validates the committer; the caller stores the offsets when this returns NONE. */
  validateCommit(groupId: string, generationId: number, memberId: string): number {
    const group = this.groups.get(groupId);
    if (generationId < 0 && memberId === "") {
      return group !== undefined && group.members.size > 0
        ? ErrorCode.UNKNOWN_MEMBER_ID
        : ErrorCode.NONE;
    }
    const member = group?.members.get(memberId);
    if (group === undefined || member === undefined) {
      return ErrorCode.UNKNOWN_MEMBER_ID;
    }
    if (generationId !== group.generation) {
      return ErrorCode.ILLEGAL_GENERATION;
    }
    if (group.state === "CompletingRebalance") {
      return ErrorCode.REBALANCE_IN_PROGRESS;
    }
    if (group.state === "PreparingRebalance") {
      this.commitsDuringRebalance++;
    }
    if (member.pendingJoin === null && member.pendingSync === null) {
      this.armSession(group, member);
    }
    return ErrorCode.NONE;
  }

  describe(groupId: string): GroupDescription {
    const group = this.groups.get(groupId);
    if (group === undefined) {
      return {
        errorCode: ErrorCode.NONE,
        groupId,
        state: this.offsets.hasGroup(groupId) ? "Empty" : "Dead",
        protocolType: "",
        protocol: "",
        members: [],
      };
    }
    const stable = group.state === "Stable";
    return {
      errorCode: ErrorCode.NONE,
      groupId,
      state: group.state,
      protocolType: group.protocolType,
      protocol: group.protocol,
      members: [...group.members.values()].map((m) => ({
        memberId: m.memberId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        metadata: m.protocols.find((p) => p.name === group.protocol)?.metadata ?? EMPTY,
        assignment: stable ? m.assignment : EMPTY,
      })),
    };
  }

  list(): Array<{ groupId: string; protocolType: string }> {
    const out = new Map<string, string>();
    for (const id of this.offsets.groupIds()) {
      out.set(id, "consumer");
    }
    for (const g of this.groups.values()) {
      if (g.members.size > 0 || out.has(g.groupId)) {
        out.set(g.groupId, g.protocolType || "consumer");
      }
    }
    return [...out].map(([groupId, protocolType]) => ({ groupId, protocolType }));
  }

  delete(groupId: string): number {
    const group = this.groups.get(groupId);
    if (group !== undefined && group.members.size > 0) {
      return ErrorCode.NON_EMPTY_GROUP;
    }
    if (group === undefined && !this.offsets.hasGroup(groupId)) {
      return ErrorCode.GROUP_ID_NOT_FOUND;
    }
    this.groups.delete(groupId);
    this.offsets.deleteGroup(groupId);
    return ErrorCode.NONE;
  }

  memberCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const g of this.groups.values()) {
      out[g.groupId] = g.members.size;
    }
    return out;
  }

  close(): void {
    for (const g of this.groups.values()) {
      if (g.rebalanceTimer !== null) {
        clearTimeout(g.rebalanceTimer);
      }
      for (const t of g.pendingMemberIds.values()) {
        clearTimeout(t);
      }
      for (const m of g.members.values()) {
        this.stopSession(m);
      }
    }
    this.groups.clear();
  }
}
