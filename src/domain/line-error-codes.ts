/**
 * What each code a push's or a line's `errorDetails` may carry means, in a sentence for a person: the authority's rule
 * codes (its annexure's error table, ERR10 to ERR39, and ERR40, a line that fails at processing), and this service's
 * own codes for what the authority has no code for. The rules themselves are push-line.ts's and push-rules.ts's;
 * ERR01-ERR09 are the protocol's (src/authority/protocol/error-codes.ts). Each error also carries its own message,
 * which names the line's value; this says what the rule is.
 */
export const LINE_ERROR_CODES: Readonly<Record<string, string>> = {
  ERR10: 'The serial number must be a whole number from 1 to 999.',
  ERR11: 'Two lines of the request have the same serial number.',
  ERR12: 'The club id is not valid.',
  ERR13: 'The club id is used twice.',
  ERR14: 'The IRM IFSC code must be exactly 11 characters.',
  ERR15: "The IFSC code is not the IRM's bank branch, or IRMs clubbed into one eBRC come from different banks.",
  ERR16: 'The AD code must be exactly 7 characters.',
  ERR17: 'The IRM date is not a valid date.',
  ERR18: 'The authority has no IRM with this number for the exporter.',
  ERR19: "The IRM date is not the IRM's issue date.",
  ERR20: "The currency is not the IRM's, or IRMs clubbed into one eBRC are in different currencies.",
  ERR21: 'The purpose code is not a valid RBI purpose code, or it cannot be used for an eBRC (P0101, P0108).',
  ERR22: 'The purpose code differs from the one the bank reported for the IRM.',
  ERR23: "irmRemitAmtFCC is not the IRM's available amount now: refresh the IRMs and push again.",
  ERR24: 'The payment date is missing or not a valid date.',
  ERR25: 'A shipping bill number must be 1 to 7 digits.',
  ERR26: 'A SOFTEX number must be 1 to 20 characters.',
  ERR27: 'An invoice number must be 1 to 20 characters.',
  ERR28: 'The shipping bill or invoice date is not a valid date.',
  ERR29: 'The port code must be exactly 6 characters.',
  ERR30: "The port code is not in the authority's port master.",
  ERR31: 'The bill number must be at most 20 characters.',
  ERR32: 'isVostro must be Y or N.',
  ERR33: 'vostroType must be SVRA or NVRA, given exactly when isVostro is Y.',
  ERR34: 'isThirdPartyExport must be Y or N.',
  ERR35: 'The mapped ORM amount is not a valid amount.',
  ERR36: 'The exporter\'s declaration flag is missing.',
  ERR37: 'The exporter\'s declaration flag must be Y.',
  ERR38: "The amounts mapped from one IRM add up to more than its available amount.",
  ERR39:
    'The invoice and purpose code do not go together: IT services (SOFTEX) take only P0802, P0803, P0807 and P0103; an advance (P0103) ' +
    'is invoiced on or after the remittance date; apart from P0103, one purpose code per eBRC.',
  ERR40: 'The authority could not generate the eBRC when it processed the line (the shipping bill was not found at customs, say); its amount is back on the IRM.',
  invalid_money: 'An amount must be at most 99,999,999,999,999.99, with at most two decimals, and not negative.',
  invalid_currency: 'A currency must be three capital letters.',
  invalid_purpose_code_format: 'A purpose code is P and four digits.',
  invalid_mapped_amount: 'The mapped amount must be more than 0.',
  deductions_exceed_mapped: 'The five deductions add up to more than the mapped amount.',
  upload_type_mismatch: "A line's uploadType must be the request's.",
  invalid_date: 'The date is not a valid date.',
  invalid_flag: 'The flag must be Y, N or left out.',
  invalid_branch_serial: 'The branch serial number must be a whole number from 0 to 999.',
};
