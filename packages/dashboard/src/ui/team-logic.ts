// The team page's wording and links, kept apart from the DOM so they are tested without a browser.

/** The page's lead: seats in use once both the members and the account have loaded. */
export function seatsLead(seats: number | undefined, used: number | undefined): string {
  return seats !== undefined && used !== undefined
    ? `${used} of ${seats} seats in use.`
    : "Members of your account.";
}

/** The sign-in page's link for a one-time password token; the token stays out of server logs. */
export function passwordLinkUrl(origin: string, token: string): string {
  return `${origin}/set-password#token=${token}`;
}

/** What a password link is called: a reset for a member with a password, else an invitation. */
export function passwordLinkTitle(purpose: string): string {
  return purpose === "reset" ? "Password reset link" : "Invitation link";
}

/** How long a password link works, as the keys service grants it. */
export function passwordLinkValidity(purpose: string): string {
  return purpose === "reset" ? " within a day" : " within 7 days";
}
